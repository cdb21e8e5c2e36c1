package runner

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/skillgate/skillgate/runner/gateway"

	"github.com/skillgate/skillgate/pipeline/plan"
)

// providerWatch stops a run whose provider makes going on pointless: a key
// the provider refuses on a model call stops it at once, and a run of model
// calls failed through the provider (limits.providerFaults in a row) stops it
// too. The cells it stops store nothing, so the next run resumes them.
type providerWatch struct {
	limit      int
	provider   string
	credential string
	stop       context.CancelFunc

	mu     sync.Mutex
	inRow  int
	why    string // once stopped
	keyBad bool
}

// newProviderWatch watches p's provider; stop cancels the cells.
func newProviderWatch(p *plan.Plan, stop context.CancelFunc) *providerWatch {
	return &providerWatch{limit: p.Limits.ProviderFaults, provider: p.Agent.Provider, credential: p.Agent.CredentialEnv, stop: stop}
}

// exchange hears of one exchange with the provider: fault nil for a success.
func (w *providerWatch) exchange(cell string, f *gateway.ProviderFault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.why != "":
		return
	case f == nil:
		w.inRow = 0
		return
	case f.Kind == gateway.FaultStatus && (f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden || f.Type == gateway.KeyInvalid):
		w.why = fmt.Sprintf("provider %s refused the key in %s on a model call of cell %s (%s): fix it and run again; the run stopped, and the cells it stopped will run again",
			w.provider, w.credential, cell, f.String())
		w.keyBad = true
	default:
		w.inRow++
		if w.limit == 0 || w.inRow < w.limit {
			return
		}
		w.why = fmt.Sprintf("%d model calls in a row failed through the provider (limits.providerFaults), the last in cell %s (%s): no more cells were started; run again to resume",
			w.inRow, cell, f.String())
	}
	w.stop()
}

// stopped says why the run was stopped, if it was, and whether for a refused key.
func (w *providerWatch) stopped() (why string, keyRefused bool) {
	if w == nil {
		return "", false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why, w.keyBad
}
