package framework

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP connections from a loopback address of its own to a target address, so
// that a test can cut a client's connection to a server without stopping either process: the
// client is configured with the proxy's address (for kcp, a kubeconfig whose server is the
// proxy: TLS passes through untouched, and a server certificate does not name a port).
//
// Stop cuts as a crashed server or a closed firewall port does: open connections are reset and
// new ones refused. Pause cuts as a network partition does: nothing passes in either direction,
// open connections stay open and new ones are accepted but wait, so that clients see only
// silence and their own timeouts. Start undoes either; the address stays the same throughout.
type Proxy struct {
	target string
	addr   string

	mu       sync.Mutex
	listener net.Listener
	paused   bool
	resumed  chan struct{} // closed when a pause ends
	conns    map[net.Conn]struct{}
	accepted int
	wg       sync.WaitGroup
}

// StartProxy starts a proxy to target (host:port) on a free port of 127.0.0.1.
func StartProxy(target string) (*Proxy, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), conns: map[net.Conn]struct{}{}}
	return p, p.Start()
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.addr }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Accepted is how many client connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Start makes the proxy forward: it listens again after Stop (on the same address) and lets
// data pass again after Pause. Starting a running proxy does nothing.
func (p *Proxy) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
	if p.listener != nil {
		return nil
	}
	var l net.Listener
	var err error
	// The port may linger for a moment after Stop.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if l, err = net.Listen("tcp", p.addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("proxy to %s: listening on %s again: %w", p.target, p.addr, err)
	}
	p.listener = l
	p.wg.Add(1)
	go p.accept(l)
	return nil
}

// Stop closes the listener and every open connection: clients get their connections reset and
// new ones refused until Start.
func (p *Proxy) Stop() {
	p.mu.Lock()
	l := p.listener
	p.listener = nil
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	if l != nil {
		l.Close()
	}
	p.wg.Wait()
}

// Pause holds all traffic, in both directions, of open and new connections until Start.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resumed = make(chan struct{})
	}
}

// Close stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
	p.mu.Unlock()
	p.Stop()
}

// gate blocks while the proxy is paused; it returns false if the connection went meanwhile.
func (p *Proxy) gate(c net.Conn) bool {
	for {
		p.mu.Lock()
		paused, resumed := p.paused, p.resumed
		_, open := p.conns[c]
		p.mu.Unlock()
		if !open {
			return false
		}
		if !paused {
			return true
		}
		select {
		case <-resumed:
		case <-time.After(100 * time.Millisecond): // look again whether c was closed
		}
	}
}

func (p *Proxy) accept(l net.Listener) {
	defer p.wg.Done()
	for {
		client, err := l.Accept()
		if err != nil {
			return // closed by Stop
		}
		p.mu.Lock()
		if p.listener != l {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.accepted++
		p.conns[client] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(client)
	}
}

// serve dials the target once traffic may pass, and copies both ways until either side ends.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.forget(client)
	if !p.gate(client) {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if _, open := p.conns[client]; !open {
		p.mu.Unlock()
		server.Close()
		return
	}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	defer p.forget(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
	// One direction ended: end both, as a TCP proxy without half-close support does.
	p.forget(client)
	p.forget(server)
	<-done
}

// copy copies from src to dst, holding each chunk while the proxy is paused.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if !p.gate(src) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(src) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or the connection closed
			return
		}
	}
}

func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}
