package web_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"chorus/web"
)

// The guard holds at most MaxConnections open: a connection over the cap
// waits until one closes. A connection refused for its address frees its
// slot at once, however many are refused.
func TestConnGuardSlots(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := web.NewConnGuard(ln, &http.Server{}, web.ConnGuardOptions{MaxConnections: 2, PerAddress: 1})
	defer g.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := g.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	accept := func(within time.Duration) net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(within):
			return nil
		}
	}

	dial("127.0.0.1")
	first := accept(10 * time.Second)
	if first == nil {
		t.Fatal("the first connection was not accepted")
	}
	// The address holds its one: ten more of it are refused, each slot
	// freed, so that another address gets the second.
	for range 10 {
		dial("127.0.0.1")
	}
	dial("127.0.0.2")
	second := accept(10 * time.Second)
	if second == nil {
		t.Fatal("another address's connection was not accepted after ten refusals")
	}
	if a := second.RemoteAddr().(*net.TCPAddr).IP.String(); a != "127.0.0.2" {
		t.Fatalf("accepted a connection of %s, want 127.0.0.2's", a)
	}
	// Both slots are held: a third waits until one closes.
	dial("127.0.0.3")
	if c := accept(500 * time.Millisecond); c != nil {
		t.Fatalf("a third connection was accepted over the cap of 2: %v", c.RemoteAddr())
	}
	first.Close()
	if accept(10*time.Second) == nil {
		t.Fatal("the waiting connection was not accepted once a slot was free")
	}
}
