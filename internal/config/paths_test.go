package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConfigPathsRelativeToFile: relative paths in a config file are
// relative to the file's folder, whatever the working folder; those from
// REPORTJOB_* variables, and every path without a file, to the working
// folder.
func TestConfigPathsRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir()) // another folder
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file     string // file "": no config file
		env            []string
		store, sinkDir string
	}{
		{name: "file keys", file: "store: {embedded: {path: ./data/x.db}}\nsink: {url: file://./out}\n",
			store: filepath.Join(dir, "data/x.db"), sinkDir: filepath.Join(dir, "out")},
		{name: "parent folder", file: "store: {embedded: {path: ../x.db}}\nsink: {url: file://reports}\n",
			store: filepath.Join(filepath.Dir(dir), "x.db"), sinkDir: filepath.Join(dir, "reports")},
		{name: "defaults under a file", file: "job_name: j\n",
			store: filepath.Join(dir, "data/reportjob.db"), sinkDir: filepath.Join(dir, "reports")},
		{name: "absolute", file: "store: {embedded: {path: /srv/x.db}}\nsink: {url: file:///srv/reports}\n",
			store: "/srv/x.db", sinkDir: "/srv/reports"},
		{name: "environment", file: "job_name: j\n",
			env:   []string{"REPORTJOB_STORE_EMBEDDED_PATH=./env.db", "REPORTJOB_SINK_URL=file://./env-reports"},
			store: "./env.db", sinkDir: "./env-reports"},
		{name: "no file", store: "./data/reportjob.db", sinkDir: "./reports"},
		{name: "no file, environment", env: []string{"REPORTJOB_SINK_URL=file://r"}, store: "./data/reportjob.db", sinkDir: "r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, explicit := "", false
			if tc.file != "" {
				path, explicit = write("config.yaml", tc.file), true
			}
			c, err := Load(path, explicit, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Store.Embedded.Path != tc.store || c.Sink.Dir != tc.sinkDir || c.File != path {
				t.Errorf("store %q, sink dir %q, file %q; want %q, %q, %q", c.Store.Embedded.Path, c.Sink.Dir, c.File, tc.store, tc.sinkDir, path)
			}
		})
	}
	// A file in the working folder: the paths are kept as written.
	t.Chdir(dir)
	write("config.yaml", "store: {embedded: {path: ./data/x.db}}\n")
	c, err := Load("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.Embedded.Path != "./data/x.db" || c.Sink.Dir != "./reports" {
		t.Errorf("./config.yaml: store %q, sink dir %q; want them as written", c.Store.Embedded.Path, c.Sink.Dir)
	}
}
