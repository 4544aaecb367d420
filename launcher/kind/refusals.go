package kind

import "github.com/metaharness/metaharness/exit"

// Refusal names (exit 2) a kind's plan shares with the run's checks and
// with the other kinds. A kind's own are in launcher/<kind>.
const (
	// RefuseToolSurfaceUnsupported: --tool-surface owned on a kind that
	// cannot honour it (the run's checks, Rules.NoOwnedSurface), or in a
	// combination its plan refuses.
	RefuseToolSurfaceUnsupported exit.Name = "tool-surface-unsupported"
	// RefuseScratchWrite: writing the run's scratch tree failed.
	RefuseScratchWrite exit.Name = "scratch-write"
	// A kind's credential variable is not set (--credentials api-key).
	RefuseAPIKeyMissing exit.Name = "api-key-missing"

	// A kind's launch plan (exit 2, before the spawn), shared by the kinds
	// whose plans refuse the same things.
	RefuseEndpointWithCredential exit.Name = "endpoint-with-credential"
	RefuseMemoryFileAboveCWD     exit.Name = "memory-file-above-cwd"
)
