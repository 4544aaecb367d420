package claude

import "github.com/metaharness/metaharness/exit"

// Refusal names of the claude launch plan (exit 2, before the spawn).
const (
	RefuseEndpointWithCredential exit.Name = "endpoint-with-credential"
	RefuseMemoryFileAboveCWD     exit.Name = "memory-file-above-cwd"
)
