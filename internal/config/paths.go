package config

import (
	"path/filepath"
	"strings"
)

// pathKeys are the keys whose value is (or holds) a local path.
var pathKeys = []string{"store.embedded.path", "sink.url", "statements.directory", "statements.issuer.logo", "statements.fonts"}

// resolvePaths makes the relative paths of c relative to the folder of
// the config file (name), as docker compose does, so that a job reads and
// writes the same files whatever folder it is started from: with
// --config /etc/reportjob/config.yaml, store.embedded.path ./data/x.db is
// /etc/reportjob/data/x.db. This is the one place paths are resolved.
//
// A value from a file's key or a default is resolved against the file's
// folder; a value from a REPORTJOB_* variable, like every path when no
// file is read (name ""), against the working folder (it was typed
// there). A path resolved against "." is kept as written. Sink.URL stays
// as configured (manifests record it); Sink.Dir is resolved.
func (d *decoder) resolvePaths(c *Config, name string) {
	if name == "" {
		return
	}
	c.File = name
	base := filepath.Dir(name)
	if base == "." {
		return
	}
	fromFile := func(key string) bool { return !strings.HasPrefix(d.src[key], envPrefix) }
	if p := c.Store.Embedded.Path; p != "" && fromFile("store.embedded.path") {
		c.Store.Embedded.Path = resolve(base, p)
	}
	if p := c.Sink.Dir; p != "" && fromFile("sink.url") {
		c.Sink.Dir = resolve(base, p)
	}
	if p := c.Delivery.Email.PasswordFile; p != "" && fromFile("delivery.email.password_file") {
		c.Delivery.Email.PasswordFile = resolve(base, p)
	}
	st := &c.Statements
	if p := st.Directory; p != "" && !strings.HasPrefix(p, "s3://") && fromFile("statements.directory") {
		st.Directory = resolve(base, p)
	}
	if p := st.Issuer.Logo; p != "" && fromFile("statements.issuer.logo") {
		st.Issuer.Logo = resolve(base, p)
	}
	if fromFile("statements.fonts") {
		fonts := make([]string, len(st.Fonts))
		for i, p := range st.Fonts {
			fonts[i] = resolve(base, p)
		}
		st.Fonts = fonts
	}
}

// resolve returns p joined to base (cleaned), or p when it is absolute.
func resolve(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}
