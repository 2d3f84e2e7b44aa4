package fence

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// ErrUnfenced is a fenced write refused because its connection was not
// dialed by a transport that Transport prepared: it could not be checked
// at the wire.
var ErrUnfenced = errors.New("fence: the HTTP transport's connections are not fenced (fence.Transport was not applied)")

// Transport prepares tr for Client: its connections check, right before
// each write to the socket, the Checker of the request they are writing
// (Client binds it when the transport hands the request a connection).
// That check, not Client.Do's, is the one that counts: a run can stall for
// any time between Do and the socket (waiting for a free connection,
// dialing, a SIGSTOP, a suspended VM), and a stalled run must not send a
// write once its lease may be gone. HTTP/2 is turned off, since a
// connection must carry one request at a time to be bound to it (S3 and
// DynamoDB speak HTTP/1.1 anyway).
//
// It is a func(*http.Transport), for awshttp.BuildableClient's
// WithTransportOptions.
func Transport(tr *http.Transport) {
	var p http.Protocols
	p.SetHTTP1(true)
	tr.Protocols = &p
	tr.ForceAttemptHTTP2 = false
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = wrapDial(dial)
	if tr.DialTLSContext != nil {
		tr.DialTLSContext = wrapDial(tr.DialTLSContext)
	}
}

func wrapDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &conn{Conn: c}, nil
	}
}

// conn is a connection of a fenced transport. Before each Write it asks
// the Checker bound to it (the one of the request it is writing, none for
// a read or an unfenced request); when that fails it closes the
// connection and writes nothing, so that the server never gets the rest
// of the request and cannot apply it (DynamoDB and S3 apply a request
// only once its body is whole and its signature checked).
type conn struct {
	net.Conn
	bound atomic.Pointer[binding]
}

// binding is the fenced request a connection is writing.
type binding struct {
	ch      Checker
	req     *http.Request
	started atomic.Bool // its first Write was reached
}

func (c *conn) Write(b []byte) (int, error) {
	if bd := c.bound.Load(); bd != nil {
		if !bd.started.Swap(true) {
			beforeSocket(bd.req)
		}
		if err := bd.ch.Check(); err != nil {
			c.Conn.Close()
			return 0, &Error{Err: err}
		}
	}
	// The residual window: a stall of the process between the check above
	// and the write system call below (a handful of instructions) sends
	// these bytes late.
	return c.Conn.Write(b)
}

// bind makes c check ch (nil: nothing) before its next writes, those of
// req.
func (c *conn) bind(ch Checker, req *http.Request) {
	if ch == nil {
		c.bound.Store(nil)
		return
	}
	c.bound.Store(&binding{ch: ch, req: req})
}

// fencedConn returns the fenced connection under nc (a TLS connection's
// included), nil when there is none.
func fencedConn(nc net.Conn) *conn {
	for {
		switch c := nc.(type) {
		case *conn:
			return c
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return nil
		}
	}
}

// bindTrace returns ctx with a client trace that binds ch (nil for a read
// or an unfenced request) to every connection the transport gives the
// request (a retry inside the transport may take another one). A fenced
// write given a connection that is not fenced closes it and sets
// unfenced.
func bindTrace(ctx context.Context, ch Checker, req *http.Request, unfenced *atomic.Bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			c := fencedConn(info.Conn)
			if c == nil {
				if ch != nil {
					unfenced.Store(true)
					info.Conn.Close()
				}
				return
			}
			c.bind(ch, req)
		},
	})
}
