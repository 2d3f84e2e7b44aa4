package filesink

import (
	"container/list"
	"sync"
)

// The descriptors of the folders deferred Puts wrote to last. A period's
// publication puts its objects folder by folder: the four files of an
// agency's period, then the next agency's; a month's, the statement's PDF
// and CSV. Each unnamed-file Put (unnamed.go) resolved its folder with an
// openat2(2) from DIR and closed it: 4 of every 6 of those look-ups found
// a folder the Put before had just opened. The Sink now keeps the last
// folderCap of them open and shares each between the Puts that use it.
//
// A kept descriptor names a folder, not a path. Two things can part them,
// and neither can make an object land anywhere but at its key:
//
//   - A Delete (or a failed Put's prune) removes the folder. The kernel
//     then refuses to create or link a file in it: the Put hands the
//     descriptor back as stale (release) and resolves the path again, or
//     takes the path through the temporary folder, which makes the folder
//     again (place).
//   - Another process renames a folder below DIR while a run writes into
//     it. A descriptor resolved for each Put had the same window between
//     its look-up and its link; a kept one has it for as long as it is
//     kept. Nothing of reportjob renames a folder; a sink's folders are
//     not to be moved while a run writes to them (docs/reports.md).

// folderCap is how many folder descriptors a Sink keeps: more than the
// folders in flight at report.concurrency 64, a few hundred bytes of
// kernel memory each.
const folderCap = 128

// folderCache keeps folder descriptors, the least recently used dropped
// first. Safe for concurrent use.
type folderCache struct {
	mu  sync.Mutex
	m   map[string]*list.Element // of *heldFolder
	lru list.List                // front: the most recently used
}

// heldFolder is one kept descriptor. fd stays open while refs > 0 or
// while the cache keeps it.
type heldFolder struct {
	rel     string
	fd      int   // once ready is closed; -1 when err
	err     error // the open's, once ready is closed
	ready   chan struct{}
	refs    int
	dropped bool // out of the cache: closed once refs is 0
}

// acquire returns the descriptor of the folder rel, kept or opened by
// open (which returns a new descriptor the cache then owns). Puts that
// ask for a folder while it is being opened wait for that open: the
// objects of a new folder, put at once, make and open it once. The
// caller hands it back with release.
func (c *folderCache) acquire(rel string, open func() (int, error)) (*heldFolder, error) {
	c.mu.Lock()
	if e, ok := c.m[rel]; ok {
		h := e.Value.(*heldFolder)
		h.refs++
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		<-h.ready
		if h.err != nil {
			c.release(h, true)
			return nil, h.err
		}
		return h, nil
	}
	if c.m == nil {
		c.m = map[string]*list.Element{}
	}
	h := &heldFolder{rel: rel, fd: -1, ready: make(chan struct{}), refs: 1}
	c.m[rel] = c.lru.PushFront(h)
	for c.lru.Len() > folderCap {
		c.drop(c.lru.Back())
	}
	c.mu.Unlock()
	h.fd, h.err = open()
	close(h.ready)
	if h.err != nil {
		c.release(h, true)
		return nil, h.err
	}
	return h, nil
}

// release hands h back. stale says the folder may be gone (the kernel
// refused to create or link a file in it): the cache drops it, and the
// next acquire of its path opens it again.
func (c *folderCache) release(h *heldFolder, stale bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if stale && !h.dropped {
		if e, ok := c.m[h.rel]; ok && e.Value == h {
			c.drop(e)
			return
		}
	}
	if h.dropped && h.refs == 0 && h.fd >= 0 {
		closeFD(h.fd)
	}
}

// drop takes e out of the cache, closing its descriptor unless a Put
// still uses it (release closes it then). c.mu is held.
func (c *folderCache) drop(e *list.Element) {
	h := c.lru.Remove(e).(*heldFolder)
	delete(c.m, h.rel)
	h.dropped = true
	if h.refs == 0 && h.fd >= 0 {
		closeFD(h.fd)
	}
}

// close drops every kept descriptor (Sink.Close: no Put is in flight).
func (c *folderCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.drop(c.lru.Back())
	}
}

// len is the number of kept descriptors (a test's).
func (c *folderCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
