// Command fakeclaude is the stand-in claude (testkit/fakevendor) as a
// program of its own, small and quick to start, for a benchmark that
// starts many at once (testkit/benchrun's parallel runs, scripts/bench).
package main

import "github.com/metaharness/metaharness/testkit/fakevendor"

func main() { fakevendor.ClaudeMain() }
