package launcher

import (
	"encoding/json"

	"github.com/metaharness/metaharness/confine"
)

// Warning codes of the confinement.
const (
	// WarnConfinementUnavailable: the host cannot make the namespaces; the
	// child runs unconfined and the attestation says so.
	WarnConfinementUnavailable = "CONFINEMENT_UNAVAILABLE"
	// WarnTokenNotCleared: the token variable stays in metaharness's own
	// environment block; the attestation does not claim otherwise.
	WarnTokenNotCleared = "TOKEN_NOT_CLEARED"
)

// EnvHide names more paths to hide from the child, colon-separated, as
// --hide does one each: for a fleet whose argv is fixed.
const EnvHide = "METAHARNESS_HIDE"

// confinable is probe's answer (confine.Probe) for self on this host, taken
// from the cache when this host and this very binary have said yes before:
// a probe is a confinement made and torn down, three starts of this binary,
// before every run's own. Only a yes is kept, with the controls it found,
// under everything that decides them (confine.Host); the cgroup, which is
// the caller's and not the host's, is read afresh every time. A host
// changed in a way the key does not see fails the run's real start, which
// refuses the run (spawn) instead of running it with less than its plan
// asked: a kept yes never turns a gap into a claim.
func confinable(self string, env map[string]string, probe func(string) (confine.Controls, error)) (confine.Controls, error) {
	type key struct {
		Self binaryID     `json:"self"`
		Host confine.Host `json:"host"`
	}
	cache := openCache(env, "confinement")
	id, idErr := identify(self)
	host, hostErr := confine.ThisHost()
	k := key{id, host}
	keyed := idErr == nil && hostErr == nil
	if keyed {
		var c confine.Controls
		if v, ok := cache.lookup(k); ok && json.Unmarshal([]byte(v), &c) == nil {
			c.Cgroup, c.CgroupWhy = confine.DelegatedCgroup()
			return c, nil
		}
	}
	c, err := probe(self)
	if err != nil {
		return confine.Controls{}, err
	}
	if keyed {
		kept := c
		kept.Cgroup, kept.CgroupWhy = "", ""
		if b, err := json.Marshal(kept); err == nil {
			_ = cache.store(k, string(b)) // a cache not written costs the next run a probe, nothing else
		}
	}
	return c, nil
}
