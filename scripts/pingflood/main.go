// Command pingflood measures what a WebSocket ping flood costs a Chorus
// server: it signs up users, opens one stream for each, writes masked ping
// frames on each as fast as the socket takes them for a while, and reports
// the pongs that came back, how each stream ended, and, given the server's
// pid, the CPU time the server used over the run and per wall second (from
// /proc). With -reconnect each stream is opened again as soon as it ends or
// is refused, as a hostile client would.
//
//	go run ./scripts/pingflood -url http://127.0.0.1:18080 -streams 4 -duration 10s -pid 1234
//
// The server must let the sign-ups through (-signup-limit off).
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:18080", "the server's base URL")
	streams := flag.Int("streams", 4, "streams flooding at once, each of a user of its own")
	duration := flag.Duration("duration", 10*time.Second, "how long to flood")
	pid := flag.Int("pid", 0, "the server's pid, to read its CPU time; 0: not read")
	reconnect := flag.Bool("reconnect", false, "open the stream again, at once, each time it ends or is refused, until the time is up")
	flag.Parse()

	tokens := make([]string, *streams)
	for i := range tokens {
		tokens[i] = signUp(*base)
	}
	u, err := url.Parse(*base)
	if err != nil {
		log.Fatal(err)
	}
	var pongs atomic.Int64
	var mu sync.Mutex
	ends := map[string]int{} // how the streams ended, and how often
	cpu0 := cpuSeconds(*pid)
	start := time.Now()
	deadline := start.Add(*duration)
	var wg sync.WaitGroup
	for _, token := range tokens {
		wg.Go(func() {
			for {
				end := flood(u.Host, token, deadline, &pongs)
				mu.Lock()
				ends[end]++
				mu.Unlock()
				if !*reconnect || time.Now().After(deadline) {
					return
				}
			}
		})
	}
	wg.Wait()
	// Streams closed early leave the server idle for the rest of the time,
	// which the CPU figure counts: every run spans the same wall time.
	time.Sleep(time.Until(deadline))
	wall := time.Since(start).Seconds()
	cpu := cpuSeconds(*pid) - cpu0
	fmt.Printf("streams %d, %.1f s: %d pongs (%.0f a second); server CPU %.2f s (%.2f s a second); ends %v\n",
		*streams, wall, pongs.Load(), float64(pongs.Load())/wall, cpu, cpu/wall, ends)
}

// signUp makes a user and returns its session token.
func signUp(base string) string {
	login := "flood_" + strings.ReplaceAll(uuid.NewString()[:12], "-", "")
	body, _ := json.Marshal(map[string]string{"login": login, "name": login, "password": "password-" + login})
	res, err := http.Post(base+"/api/v1/users", "application/json", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var out struct{ Token string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.Token == "" {
		log.Fatalf("sign up: %d %v", res.StatusCode, err)
	}
	return out.Token
}

// flood opens a stream with token and writes pings on it until deadline or
// until the server closes it, counting the pongs; it returns how the stream
// ended.
func flood(host, token string, deadline time.Time, pongs *atomic.Int64) string {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return "dial failed"
	}
	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(conn, "GET /api/v1/stream HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n", host, token)
	r := bufio.NewReader(conn)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		return "no answer"
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		return "refused " + strconv.Itoa(res.StatusCode)
	}
	_ = conn.SetDeadline(deadline)

	// 4,096 masked pings with empty payloads, written over and over.
	ping := []byte{0x89, 0x80, 1, 2, 3, 4}
	batch := bytes.Repeat(ping, 4096)
	go func() {
		for {
			if _, err := conn.Write(batch); err != nil {
				return
			}
		}
	}()
	// The server's frames come back while the pings go out; a stream still
	// open at the deadline ends there.
	for {
		var head [2]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if time.Now().After(deadline) {
				return "open at the deadline"
			}
			return "reset or EOF"
		}
		n := int(head[1] & 0x7f)
		switch n {
		case 126:
			var ext [2]byte
			_, _ = io.ReadFull(r, ext[:])
			n = int(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			_, _ = io.ReadFull(r, ext[:])
			n = int(binary.BigEndian.Uint64(ext[:]))
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return "reset or EOF"
		}
		switch head[0] & 0x0f {
		case 0xa:
			pongs.Add(1)
		case 0x8:
			code := 0
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
			}
			return fmt.Sprintf("closed %d", code)
		}
	}
}

// cpuSeconds is the user and system CPU time process pid has used, from
// /proc/<pid>/stat; 0 for pid 0.
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		log.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	const ticks = 100 // USER_HZ on Linux
	return (utime + stime) / ticks
}
