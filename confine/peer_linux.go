package confine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// PeerIs reports, nil when it holds, that the TCP connection a server
// accepted on server from peer is process pid's own: the socket with those
// ends, as the kernel lists it in pid's network namespace, is one of pid's
// descriptors. The proxy asks it of the vendor, so that a request its
// commands make on the model route is told from the vendor's own whatever
// credential it carries; a connection whose descriptor a command holds
// too (inherited) still counts as the vendor's. The kernel's word, not the
// peer's: nothing the peer sends goes into it.
func PeerIs(pid int, server, peer net.Addr) error {
	s, ok1 := server.(*net.TCPAddr)
	p, ok2 := peer.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return fmt.Errorf("the connection from %s to %s is not TCP", peer, server)
	}
	inode, err := socketInode(pid, p, s)
	if err != nil {
		return err
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("reading the vendor's descriptors: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading the vendor's descriptors: %w", err)
	}
	want := "socket:[" + inode + "]"
	for _, n := range names {
		if l, err := os.Readlink(dir + "/" + n); err == nil && l == want {
			return nil
		}
	}
	return fmt.Errorf("the connection from %s is not the vendor's (pid %d holds no descriptor of its socket)", peer, pid)
}

// socketInode is the inode of the TCP socket whose local end is local and
// remote end remote, from /proc/<pid>/net/tcp and tcp6 (pid's network
// namespace).
func socketInode(pid int, local, remote *net.TCPAddr) (string, error) {
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && table == "tcp6" {
				continue // no IPv6 in this kernel
			}
			return "", fmt.Errorf("reading the vendor's sockets: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // the header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 {
				continue
			}
			if sameEnd(f[1], local) && sameEnd(f[2], remote) {
				return f[9], nil
			}
		}
	}
	return "", fmt.Errorf("the connection from %s is not among the vendor's sockets (pid %d's network namespace lists none with those ends)", local, pid)
}

// sameEnd reports whether a /proc/net/tcp address (hex address, as the
// kernel holds it in 32-bit words of host order, a colon, hex port) is a.
func sameEnd(field string, a *net.TCPAddr) bool {
	h, port, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	if p, err := strconv.ParseUint(port, 16, 16); err != nil || int(p) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
