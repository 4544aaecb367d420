package confine

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPeerIs: a connection this process made is its own; one a child
// process made is the child's and not this process's, over IPv4 and IPv6.
func TestPeerIs(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Logf("no %s here: %v", host, err)
			continue
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 2)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		}()
		mine, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer mine.Close()
		c := <-accepted
		if err := PeerIs(os.Getpid(), c.LocalAddr(), c.RemoteAddr()); err != nil {
			t.Errorf("%s: this process's own connection: %v", host, err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		child := exec.Command("/bin/bash", "-c", "exec 3<>/dev/tcp/"+strings.Trim(host, "[]")+"/"+port+"; exec sleep 30")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
		var theirs net.Conn
		select {
		case theirs = <-accepted:
		case <-time.After(10 * time.Second):
			t.Fatal("the child never connected")
		}
		if err := PeerIs(os.Getpid(), theirs.LocalAddr(), theirs.RemoteAddr()); err == nil || !strings.Contains(err.Error(), "is not the vendor's") {
			t.Errorf("%s: a child's connection taken for this process's: %v", host, err)
		}
		if err := PeerIs(child.Process.Pid, theirs.LocalAddr(), theirs.RemoteAddr()); err != nil {
			t.Errorf("%s: the child's own connection: %v", host, err)
		}
		if err := PeerIs(child.Process.Pid, c.LocalAddr(), c.RemoteAddr()); err == nil {
			t.Errorf("%s: this process's connection taken for the child's", host)
		}
	}
}
