package launcher

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/metaharness/metaharness/confine"
)

// vendorPeer is the vendor's process as the loopback proxy's Admit asks
// of it (loopback.Config.Admit), and the decision endpoint's
// (decidehttp.Endpoint.Admit): a model request is forwarded, and a
// decision request answered, only on a connection the vendor itself
// holds, so that one its commands make, with whatever credential they
// found, is refused and recorded. It is the
// record's line under the kernel's (the command sandbox keeps the commands
// off the model route's port), and holds where that one does not
// (unconfined, no Landlock).
type vendorPeer struct {
	once  sync.Once
	known chan struct{}
	pid   int // 0: the init could not say
}

// peerWait bounds how long a connection waits for the vendor's pid: none
// can come from the vendor before it is spawned, and spawning ends within
// it or fails.
const peerWait = 10 * time.Second

func newVendorPeer() *vendorPeer { return &vendorPeer{known: make(chan struct{})} }

// spawned records the vendor's pid once the child runs.
func (v *vendorPeer) spawned(pid int) {
	v.once.Do(func() { v.pid = pid; close(v.known) })
}

// admit is the proxy's Admit: nil when the connection from remote to local
// is the vendor's own (confine.PeerIs), or when the vendor's pid is
// unknown, where nothing can be told.
func (v *vendorPeer) admit(local, remote net.Addr) error {
	select {
	case <-v.known:
	case <-time.After(peerWait):
		return errors.New("a connection came before the vendor was started")
	}
	if v.pid == 0 {
		return nil
	}
	return confine.PeerIs(v.pid, local, remote)
}

// admit is the Admit the run's proxy and its decision endpoint are given:
// the vendor's peer check on Linux, whose kernel lists each socket's
// holder, and none elsewhere. It is asked for before the spawn, which
// tells it the vendor's pid.
func (r *run) admit() func(local, remote net.Addr) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	if r.vendor == nil {
		r.vendor = newVendorPeer()
	}
	return r.vendor.admit
}
