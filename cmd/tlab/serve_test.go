package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const liveScenario = `name: live-test
description: Four short cells, watched in a browser.
profiles: [ethernet]
protocols: [tcp, h3]
workload:
  type: periodic
  interval: 20ms
  payload: 200
matrix:
  workload.interval: [10ms, 20ms]
count: 120
warmup: 0s
plots: [delay_box, jitter_bars]
`

// chromium returns Debian's headless Chromium, failing on CI when it is
// missing (scripts/setup --tests installs it) and skipping elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing on CI: scripts/setup --tests installs it")
	}
	t.Skip("chromium is not installed (scripts/setup --tests installs it)")
	return ""
}

// dumpDOM loads url in headless Chromium, as a person's browser would,
// and returns the page's DOM once loaded.
func dumpDOM(t *testing.T, browser, url string) string {
	t.Helper()
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, "--dump-dom", url).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

var cellsComplete = regexp.MustCompile(`(\d+) of (\d+) cells complete`)

// TestLiveViewInChromium: a person watching tlab run --serve in a
// browser sees the cells arrive one after another; once the run is over,
// tlab serve shows the whole run, its plots and a link to the report.
func TestLiveViewInChromium(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	browser := chromium(t)
	bin := buildTlab(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	os.WriteFile(file, []byte(liveScenario), 0o644)
	out := filepath.Join(dir, "run")
	addr := freeAddr(t)
	cmd := exec.Command(bin, "run", file, "--out", out, "--no-calibration", "--quality", "off", "--serve", addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	var seen []int
	total := 0
	var runErr error
watch:
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		select {
		case runErr = <-exited:
			break watch
		default:
		}
		m := cellsComplete.FindStringSubmatch(dumpDOM(t, browser, "http://"+addr+"/"))
		if m == nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		done, _ := strconv.Atoi(m[1])
		total, _ = strconv.Atoi(m[2])
		if len(seen) == 0 || seen[len(seen)-1] != done {
			seen = append(seen, done)
		}
	}
	if runErr != nil {
		t.Fatalf("tlab run: %v\n%s", runErr, stderr.String())
	}
	t.Logf("cells complete as the browser saw them: %v of %d", seen, total)
	if total != 4 {
		t.Errorf("the page counts %d cells, want 4", total)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Errorf("cells went backwards: %v", seen)
		}
	}
	// Cells arrived while the browser watched: at least two counts below
	// the total (the runner's own pace: one cell takes seconds, the
	// browser looks about every second).
	if len(seen) < 2 || seen[0] >= total {
		t.Errorf("the browser did not see cells arrive: %v", seen)
	}

	// The finished run, served by tlab serve.
	addr2 := freeAddr(t)
	serve := exec.Command(bin, "serve", out, "--listen", addr2)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill() })
	var page string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !strings.Contains(page, "cells complete"); {
		page = dumpDOM(t, browser, "http://"+addr2+"/")
	}
	for _, want := range []string{"4 of 4 cells complete", "the run is over", `href="files/report.html"`, `<figure id="delay_box`} {
		if !strings.Contains(page, want) {
			t.Errorf("the finished run's page lacks %q", want)
		}
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("the finished run's page still reloads itself")
	}
	serve.Process.Signal(syscall.SIGINT)
	if err := serve.Wait(); err != nil {
		t.Errorf("tlab serve after Ctrl-C: %v", err)
	}
}

// TestLiveViewDropsSilentClients: connections that open and say nothing
// (a slowloris) are closed after the view's read timeout, and beyond its
// connection cap they wait instead of costing the view a descriptor each.
func TestLiveViewDropsSilentClients(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	var log strings.Builder
	stop, err := serveLive(addr, dir, nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < liveMaxConns+8; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// The first one is accepted and must be dropped within the read
	// timeout (with a margin for a busy host).
	start := time.Now()
	conns[0].SetReadDeadline(start.Add(liveReadTimeout + 10*time.Second))
	if _, err := conns[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("the silent connection got an answer")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a silent connection stayed open %v", time.Since(start))
	}
	t.Logf("a silent connection was closed after %v", time.Since(start).Round(time.Millisecond))
}

// TestLiveViewAnswersBesideSlowHeaders: 40 clients that send a request
// header a line at a time, a line a second (a slowloris), do not keep a
// real request waiting: with one place per connection up to 32 and the
// read timeout (10 s) as the header deadline, the request waited 10 s.
// It is answered within a second (milliseconds on an idle loopback; the
// margin is for a busy host), and each slow client is dropped once its
// header deadline, shorter than the read timeout, has passed.
func TestLiveViewAnswersBesideSlowHeaders(t *testing.T) {
	if liveHeaderTimeout >= liveReadTimeout {
		t.Fatalf("header deadline %v is not shorter than the read timeout %v", liveHeaderTimeout, liveReadTimeout)
	}
	addr := freeAddr(t)
	var log strings.Builder
	stop, err := serveLive(addr, t.TempDir(), nil, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := make([]net.Conn, 40)
	for i := range slow {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		slow[i] = c
		go func() {
			c.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
			for j := 0; ctx.Err() == nil; j++ {
				time.Sleep(time.Second)
				if _, err := c.Write([]byte("X-Slow-" + strconv.Itoa(j) + ": 1\r\n")); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // every slow client connected and sending
	start := time.Now()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("a real request beside 40 slow headers: %v, status %d", took.Round(time.Millisecond), resp.StatusCode)
	if took > time.Second {
		t.Fatalf("the real request waited %v beside 40 slow headers", took)
	}
	// The slow clients are dropped at the header deadline, not after the
	// read timeout (a margin of 3 s for a busy host).
	c := slow[0]
	c.SetReadDeadline(start.Add(liveHeaderTimeout + 3*time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a slow-header client was still connected %v after the first", time.Since(start))
	}
	t.Logf("a slow-header client was answered %q and closed", firstLine(string(b)))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
