// Package actions is what a GitHub Action that hands sessions to an Auto
// Harness fleet needs besides the client: the checks of its inputs, read
// from an environment the caller passes (HARNESS_URL, HARNESS_TARGET, …,
// the variables a composite action sets from its inputs), and the writers
// of its results (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, the ::notice line).
// Run is the whole dispatch Action built on them: `auto-harness dispatch`
// calls it, and the composite action actions/dispatch/action.yml runs
// that.
//
// Every refusal of an input is a *DispatchError with a code (the Code*
// constants) and a message naming the variable; Run checks every input
// before it sends any request. The parsers of outside text are fuzzed
// (FuzzParseHarnessTarget, FuzzParseHarnessFallbacks, FuzzParseMetadata,
// FuzzParseAPIOrigin), and their vectors are data (testdata/parsers.jsonl).
package actions
