package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Deleting between measurements.
//
// On ext4 without a journal the kernel avoids reusing an inode deleted
// less than 60 s ago, or less than 360 s ago while its inode-table block
// is dirty (fs/ext4/ialloc.c, recently_deleted): every new inode's search
// checks the free inodes of its group one by one until it finds an old
// one. After a scenario's folder of a few hundred thousand files is
// deleted, each mkdir and create of the next minutes pays for those
// checks: profiled, 19 % of a run's samples 2 minutes after such an rm,
// under 1 % 7.5 minutes after (PERFORMANCE.md, "Issue 35 target 1 on a
// settled disk"). So on such a disk the bench moves each finished folder
// aside (a rename frees no inode) and deletes them all at the end.

// trashName is the folder of the scratch folder that holds them.
const trashName = ".deleted"

// remove deletes the finished folder dir of the scratch folder, unless
// the bench keeps its files; on ext4 without a journal it moves it aside,
// for deleteTrash.
func (b *bench) remove(dir string) {
	if b.keep {
		return
	}
	if b.noJournal != "" {
		trash := filepath.Join(b.work, trashName)
		if err := os.MkdirAll(trash, 0o755); err == nil {
			if err := os.Rename(dir, filepath.Join(trash, filepath.Base(dir))); err == nil {
				return
			}
		}
	}
	os.RemoveAll(dir)
}

// deleteTrash deletes the folders remove moved aside.
func (b *bench) deleteTrash() {
	os.RemoveAll(filepath.Join(b.work, trashName))
}

// ext4NoJournal returns the device name of the file system of dir when it
// is ext4 without a journal ("" otherwise, or when it cannot tell). root
// is where /proc and /sys are ("/", or a test's folder): the mount is the
// one of /proc/self/mountinfo with the longest mount point above dir; its
// device is named by /sys/dev/block/MAJOR:MINOR (dm-0, not the mapper
// name); ext4 lists it in /proc/fs/ext4/NAME, and jbd2 lists its journal,
// if any, in /proc/fs/jbd2/NAME-INODE.
func ext4NoJournal(root, dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	f, err := os.Open(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var best, fstype, devno string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		mp := unescapeMount(fields[4])
		if !under(dir, mp) || len(mp) < len(best) {
			continue
		}
		best, fstype, devno = mp, fields[sep+1], fields[2]
	}
	if best == "" || fstype != "ext4" {
		return ""
	}
	target, err := os.Readlink(filepath.Join(root, "sys/dev/block", devno))
	if err != nil {
		return ""
	}
	name := filepath.Base(target)
	if _, err := os.Stat(filepath.Join(root, "proc/fs/ext4", name)); err != nil {
		return ""
	}
	journals, err := os.ReadDir(filepath.Join(root, "proc/fs/jbd2"))
	if err != nil && !os.IsNotExist(err) {
		return ""
	}
	for _, j := range journals {
		if strings.HasPrefix(j.Name(), name+"-") {
			return ""
		}
	}
	return name
}

// under reports whether path is mount point mp or below it.
func under(path, mp string) bool {
	return mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, ok := octal(s[i+1 : i+4]); ok {
				out.WriteByte(v)
				i += 3
				continue
			}
		}
		out.WriteByte(s[i])
	}
	return out.String()
}

func octal(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}
