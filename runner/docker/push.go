package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
)

// pushMessage is one message of the engine's JSON push stream.
type pushMessage struct {
	Status      string `json:"status"`
	ID          string `json:"id"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
	Aux *struct {
		Tag    string `json:"Tag"`
		Digest string `json:"Digest"`
	} `json:"aux"`
}

// PushImage pushes local's image to its repository of registry
// (RegistryRepo), under a tag that is its image ID, so a later build never
// takes a pushed build's tag (the engine keeps the digest it recorded, which
// PushedRef reads, only while the repository has a tag of it locally), with the credentials the user's Docker config
// holds for the registry's host (see registryAuth). It writes the engine's
// progress to log, a line per layer's step, and returns the reference by
// digest the engine recorded.
func (e *Engine) PushImage(ctx context.Context, local, registryRef string, log io.Writer) (_ PushedImage, err error) {
	repo, err := RegistryRepo(registryRef, local)
	if err != nil {
		return PushedImage{}, err
	}
	id, ok, err := e.ImageExists(ctx, local)
	if err != nil {
		return PushedImage{}, err
	}
	if !ok {
		return PushedImage{}, fmt.Errorf("push image %s: not in the Docker engine", local)
	}
	tagged, err := reference.WithTag(repo, strings.TrimPrefix(id, "sha256:"))
	if err != nil {
		return PushedImage{}, fmt.Errorf("push image %s: %w", local, err)
	}
	auth, err := registryAuth(reference.Domain(repo))
	if err != nil {
		return PushedImage{}, fmt.Errorf("push image %s: %w", local, err)
	}
	if err := e.Tag(ctx, id, tagged.String()); err != nil {
		return PushedImage{}, fmt.Errorf("push image %s: %w", local, err)
	}
	defer func() {
		if err != nil {
			// A tag that carried no push is no record of one.
			e.c.ImageRemove(context.WithoutCancel(ctx), tagged.String(), image.RemoveOptions{})
		}
	}()
	rc, err := e.c.ImagePush(ctx, tagged.String(), image.PushOptions{RegistryAuth: auth})
	if err != nil {
		return PushedImage{}, fmt.Errorf("push image %s to %s: %w", local, repo.Name(), err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	pushed := ""
	for {
		var m pushMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return PushedImage{}, fmt.Errorf("push image %s to %s: read the engine's progress: %w", local, repo.Name(), err)
		}
		switch {
		case m.ErrorDetail != nil || m.Error != "":
			msg := m.Error
			if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return PushedImage{}, fmt.Errorf("push image %s to %s: %s", local, repo.Name(), msg)
		case m.Aux != nil && m.Aux.Digest != "":
			pushed = m.Aux.Digest
		case m.Status == "" || m.Status == "Pushing" || m.Status == "Preparing" || m.Status == "Waiting":
			// A progress bar's steps, not news.
		case m.ID != "":
			fmt.Fprintf(log, "push %s: %s: %s\n", local, m.ID, m.Status)
		default:
			fmt.Fprintf(log, "push %s: %s\n", local, m.Status)
		}
	}
	if pushed == "" {
		return PushedImage{}, fmt.Errorf("push image %s to %s: the engine reported no digest", local, repo.Name())
	}
	return PushedImage{Local: local, ID: id, Ref: repo.Name() + "@" + pushed}, nil
}

// PushedRef is this build of local's image as it was pushed to registry:
// the reference by digest the engine recorded when it pushed (the image's
// RepoDigests). ok is false when it was not pushed there, or when local
// names another build since: a new build has no digest there until pushed.
func (e *Engine) PushedRef(ctx context.Context, local, registryRef string) (p PushedImage, ok bool, err error) {
	repo, err := RegistryRepo(registryRef, local)
	if err != nil {
		return PushedImage{}, false, err
	}
	info, found, err := e.ImageInfo(ctx, local)
	if err != nil || !found {
		return PushedImage{}, false, err
	}
	for _, rd := range info.RepoDigests {
		named, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if c, isCanonical := named.(reference.Canonical); isCanonical && named.Name() == repo.Name() {
			return PushedImage{Local: local, ID: info.ID, Ref: repo.Name() + "@" + c.Digest().String()}, true, nil
		}
	}
	return PushedImage{}, false, nil
}

// dockerConfig is what registryAuth reads of the user's Docker config.
type dockerConfig struct {
	Auths map[string]struct {
		Auth          string `json:"auth"`
		Username      string `json:"username"`
		Password      string `json:"password"`
		IdentityToken string `json:"identitytoken"`
	} `json:"auths"`
	CredsStore  string            `json:"credsStore"`
	CredHelpers map[string]string `json:"credHelpers"`
}

// dockerConfigFile is the user's Docker config: $DOCKER_CONFIG/config.json,
// else ~/.docker/config.json.
func dockerConfigFile() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return filepath.Join(d, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

// registryAuth is the X-Registry-Auth header of a push to host: the
// credentials of the Docker config's auths entry for host (auth, or
// username and password, or an identity token), else none. Credentials a
// credential helper keeps (credsStore, credHelpers) are not read: skillgate
// runs no docker-credential-* program, and says so rather than push
// without them.
func registryAuth(host string) (string, error) {
	file := dockerConfigFile()
	var cfg dockerConfig
	if b, err := os.ReadFile(file); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return "", fmt.Errorf("read docker config %s: %w", file, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read docker config: %w", err)
	}
	ac := registry.AuthConfig{ServerAddress: host}
	found, listed := false, false
	for key, a := range cfg.Auths {
		if !sameRegistryHost(key, host) {
			continue
		}
		listed = true
		switch {
		case a.Auth != "":
			raw, err := base64.StdEncoding.DecodeString(a.Auth)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok {
				return "", fmt.Errorf("read docker config %s: auths[%q].auth is not base64 of user:password", file, key)
			}
			ac.Username, ac.Password = user, pass
		case a.IdentityToken != "":
			ac.IdentityToken = a.IdentityToken
		case a.Username != "" || a.Password != "":
			ac.Username, ac.Password = a.Username, a.Password
		default:
			continue
		}
		found = true
		break
	}
	if !found {
		helper := cfg.CredHelpers[host]
		if helper == "" && listed {
			helper = cfg.CredsStore
		}
		if helper != "" {
			return "", fmt.Errorf("read credentials of registry %s: %s keeps them in docker-credential-%s, which skillgate does not run (credential helpers are not supported): put them in its auths, or push to a registry that needs none", host, file, helper)
		}
	}
	enc, err := registry.EncodeAuthConfig(ac)
	if err != nil {
		return "", fmt.Errorf("encode credentials of registry %s: %w", host, err)
	}
	return enc, nil
}

// sameRegistryHost reports whether a Docker config's auths key (a host, or
// a URL such as https://index.docker.io/v1/) names host.
func sameRegistryHost(key, host string) bool {
	k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	k, _, _ = strings.Cut(k, "/")
	if host == "docker.io" {
		return k == "docker.io" || k == "index.docker.io" || k == "registry-1.docker.io"
	}
	return k == host
}
