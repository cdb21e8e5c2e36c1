package gateway

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/skillgate/skillgate/runner/redact"
)

// ConnectionSettings are a suite's words for how the host reaches a real
// provider (see #Agent and #Judge): the base URL or where to find it, the
// credential's variable and how it is sent, extra headers' variables.
type ConnectionSettings struct {
	Provider                               string
	Upstream, UpstreamEnv, UpstreamDefault string
	CredentialEnv, Auth                    string
	// Headers name, by header, the host variable holding its value.
	Headers map[string]string
}

// Connection is how the host reaches a real provider, read from the host:
// the base URL (its /v1 taken off), the credential, the extra headers'
// values, and the secrets they are, which nothing stored may hold.
type Connection struct {
	Upstream string
	Key      string
	Auth     string
	Headers  map[string]string
	Secrets  []redact.Secret
}

// ReadConnection reads a real provider's connection from the host: the
// upstream is the suite's, else the host's upstreamEnv variable (as the
// providers' SDKs read ANTHROPIC_BASE_URL and OPENAI_BASE_URL), else the
// provider's default. who ("agent", "judge") prefixes the fields messages
// name.
func ReadConnection(s ConnectionSettings, who string) (Connection, error) {
	c := Connection{Upstream: s.Upstream, Auth: s.Auth, Headers: map[string]string{}}
	from := who + ".upstream"
	if c.Upstream == "" && s.UpstreamEnv != "" {
		c.Upstream, from = os.Getenv(s.UpstreamEnv), s.UpstreamEnv
	}
	if c.Upstream == "" {
		c.Upstream, from = s.UpstreamDefault, who+".upstreamDefault"
	}
	if c.Upstream == "" {
		return c, fmt.Errorf("%s.upstream is unset for provider %s, and so are %s.upstreamEnv's variable and %s.upstreamDefault", who, s.Provider, who, who)
	}
	u, err := ParseUpstream(c.Upstream)
	if err != nil {
		return c, fmt.Errorf("%s: %w", from, err)
	}
	c.Upstream = u.String()
	if s.CredentialEnv == "" {
		return c, fmt.Errorf("%s.credentialEnv names no variable for provider %s", who, s.Provider)
	}
	if c.Key = os.Getenv(s.CredentialEnv); c.Key == "" {
		return c, fmt.Errorf("%s is not set; set it to the %s credential, or use provider \"scripted\" to run offline", s.CredentialEnv, s.Provider)
	}
	c.Secrets = append(c.Secrets, redact.Secret{Name: s.CredentialEnv, Value: c.Key})
	for name, env := range s.Headers {
		v := os.Getenv(env)
		if v == "" {
			return c, fmt.Errorf("%s.headers: %s, the variable for header %s, is not set", who, env, name)
		}
		c.Headers[name] = v
		c.Secrets = append(c.Secrets, redact.Secret{Name: env, Value: v})
	}
	return c, nil
}

// Authorize puts a credential and extra headers into h as the provider
// expects them: auth "x-api-key", "bearer" (Authorization: Bearer),
// "oauth" (a bearer token with Anthropic's OAuth beta flag added to
// anthropic-beta), "api-key" (Azure OpenAI's header) or "x-goog-api-key"
// (the Gemini API's); "" is the family's own, x-api-key for anthropic,
// x-goog-api-key for gemini and bearer for openai.
func Authorize(h http.Header, family, auth, key string, headers map[string]string) {
	switch authOf(family, auth) {
	case "x-api-key":
		h.Set("X-Api-Key", key)
	case "api-key":
		h.Set("Api-Key", key)
	case "x-goog-api-key":
		h.Set("X-Goog-Api-Key", key)
	case "oauth":
		h.Set("Authorization", "Bearer "+key)
		beta := h.Get("Anthropic-Beta")
		if !strings.Contains(beta, oauthBeta) {
			if beta != "" {
				beta += ","
			}
			h.Set("Anthropic-Beta", beta+oauthBeta)
		}
	default:
		h.Set("Authorization", "Bearer "+key)
	}
	for name, v := range headers {
		h.Set(name, v)
	}
}

// oauthBeta is the anthropic-beta flag Anthropic's API wants with an OAuth
// access token.
const oauthBeta = "oauth-2025-04-20"

// authOf is how a credential is sent: auth, else the family's own way.
func authOf(family, auth string) string {
	if auth != "" {
		return auth
	}
	switch family {
	case "anthropic":
		return "x-api-key"
	case "gemini":
		return "x-goog-api-key"
	}
	return "bearer"
}

// authorize puts the real credential and the extra headers into h.
func (g *Gateway) authorize(h http.Header) {
	Authorize(h, g.family, g.cfg.Auth, g.cfg.APIKey, g.cfg.Headers)
}

// auth is how the credential is sent: the configured way, else the
// provider's own.
func (g *Gateway) auth() string { return authOf(g.family, g.cfg.Auth) }

// secretHeaderVars names, by header, the host variable whose value the
// gateway puts in it, for the redactions a recorded exchange lists.
func (g *Gateway) secretHeaderVars() map[string]string {
	m := map[string]string{}
	cred := g.cfg.CredentialEnv
	if cred == "" {
		cred = "credential"
	}
	switch g.auth() {
	case "x-api-key":
		m["X-Api-Key"] = cred
	case "api-key":
		m["Api-Key"] = cred
	default:
		m["Authorization"] = cred
	}
	for name := range g.cfg.Headers {
		env := g.cfg.HeaderEnv[name]
		if env == "" {
			env = "header " + name
		}
		m[http.CanonicalHeaderKey(name)] = env
	}
	return m
}
