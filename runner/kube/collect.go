package kube

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/skillgate/skillgate/runner/backend"
	"github.com/skillgate/skillgate/runner/internal/bounded"
)

// collect reads the workspace a cell's agent left through the API: one tar of
// the whole folder, made by the hold container, which lists every entry and
// carries every file's content. The runner compares each file with the
// fixture's, so the listing is the complete final workspace (Method "api"):
// its cost follows the workspace's size, not only the changes, since a Pod
// has no change list. The limits bound it as they bound the Docker engine's:
// limits.collect.entries counts every entry listed, the timeout the whole
// read.
func (c *Cluster) collect(ctx context.Context, pod string, spec backend.ContainerSpec) (backend.Collection, error) {
	col := backend.Collection{Method: "api"}
	lim := spec.CollectLimits
	var deadline time.Time
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if lim.Timeout > 0 {
		deadline = time.Now().Add(lim.Timeout)
		var dcancel context.CancelFunc
		cctx, dcancel = context.WithDeadline(cctx, deadline)
		defer dcancel()
	}
	prefix := path.Clean("/" + spec.CollectPrefix)
	pr, pw := io.Pipe()
	stderr := bounded.NewBuffer(4 << 10)
	ran := make(chan execEnd, 1)
	go func() {
		code, err := c.exec(cctx, pod, holdContainer, []string{"tar", "-c", "-f", "-", "-C", prefix, "."}, streamOpts{stdout: pw, stderr: stderr})
		pw.CloseWithError(err)
		ran <- execEnd{code, err}
	}()
	cutTime := fmt.Sprintf("the collection took longer than limits.collect.timeout (%s)", lim.Timeout)
	visitErr := func() error {
		defer pr.Close()
		tr := tar.NewReader(pr)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if cctx.Err() != nil && !deadline.IsZero() && time.Now().After(deadline) {
					col.Cut = cutTime
					return nil
				}
				return fmt.Errorf("read the workspace of pod %s: %w", pod, err)
			}
			rel := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
			if rel == "" {
				continue // the folder itself
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				col.Cut = cutTime
				return nil
			}
			if lim.Entries > 0 && col.Entries >= lim.Entries {
				col.Cut = fmt.Sprintf("more than %d paths in the workspace (limits.collect.entries): the rest was not collected", lim.Entries)
				return nil
			}
			en := backend.WorkspaceEntry{Path: rel, Mode: hdr.FileInfo().Mode().Perm(), Size: hdr.Size}
			switch hdr.Typeflag {
			case tar.TypeDir:
				en.Type = backend.TypeDir
			case tar.TypeReg:
				en.Type = backend.TypeFile
				size := hdr.Size
				en = en.WithContent(func() (io.ReadCloser, error) {
					return io.NopCloser(&deadlineReader{r: io.LimitReader(tr, size), deadline: deadline, reason: cutTime}), nil
				})
			case tar.TypeSymlink:
				en.Type, en.Target = backend.TypeSymlink, hdr.Linkname
			case tar.TypeLink:
				// A hard link: the archive does not repeat its earlier name's content.
				en.Type, en.Size = backend.TypeFile, 0
				target := strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
				en = en.WithContent(func() (io.ReadCloser, error) { return nil, fmt.Errorf("%s is a hard link to %s", rel, target) })
			default:
				en.Type = backend.TypeOther
			}
			col.Entries++
			if err := spec.Collect(en); err != nil {
				var cut backend.CollectCut
				if errors.As(err, &cut) {
					col.Cut = cut.Reason
					return nil
				}
				return err
			}
		}
	}()
	if visitErr != nil || col.Cut != "" {
		cancel() // stops the stream
	}
	res := <-ran
	if visitErr != nil {
		return col, visitErr
	}
	if col.Cut != "" {
		return col, nil
	}
	if res.err != nil {
		return col, fmt.Errorf("read the workspace of pod %s: %w", pod, res.err)
	}
	if res.code != 0 {
		// An entry tar could not read is missing from the listing: it must
		// not pass for a deletion.
		col.Cut = fmt.Sprintf("reading the workspace failed (tar exit %d): %s", res.code, strings.TrimSpace(string(stderr.Bytes())))
	}
	return col, nil
}

// deadlineReader ends a collection as cut when a file is read past its
// deadline.
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
	reason   string
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if !d.deadline.IsZero() && time.Now().After(d.deadline) {
		return 0, backend.CollectCut{Reason: d.reason}
	}
	return d.r.Read(p)
}
