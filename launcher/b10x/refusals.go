package b10x

import "github.com/metaharness/metaharness/exit"

// Refusal names of the b10x kind (exit 2).
const (
	// CheckSpec and Plan: before anything starts. b10x-only-flag is the
	// launcher's CheckSpec refusing a loop flag (Flags) on another kind.
	RefuseB10xOnlyFlag                        exit.Name = "b10x-only-flag"
	RefuseModelEndpointRequired               exit.Name = "model-endpoint-required"
	RefuseModelRequired                       exit.Name = "model-required"
	RefuseEffortUnsupported                   exit.Name = "effort-unsupported"
	RefuseMaxBudgetUnsupported                exit.Name = "max-budget-unsupported"
	RefuseAPIKeySecretNeedsAPIKey             exit.Name = "api-key-secret-needs-api-key"
	RefuseSubscriptionTokenConflict           exit.Name = "subscription-token-conflict"
	RefuseSubscriptionTokenPointerNeedsSource exit.Name = "subscription-token-pointer-needs-source"
	RefuseSubscriptionTokenWithAPIKey         exit.Name = "subscription-token-with-api-key"
	RefuseSubscriptionTokenEnvInvalid         exit.Name = "subscription-token-env-invalid"
	RefuseSubscriptionTokenMissing            exit.Name = "subscription-token-missing"
	RefuseSubstrateConflict                   exit.Name = "substrate-conflict"
	RefuseAllowProgramNeedsSubstrate          exit.Name = "allow-program-needs-substrate"
	RefuseToolchainWithSubstrateSocket        exit.Name = "toolchain-with-substrate-socket"
	RefuseModelWireUnknown                    exit.Name = "model-wire-unknown"
	RefuseWriteScopeInvalid                   exit.Name = "write-scope-invalid"
	RefuseSubstrateWorkspaceName              exit.Name = "substrate-workspace-name"

	// Observe: under --decisions frame or ask, the caller's --hooks file,
	// which metaharness merges behind its own hook, is not one the loop
	// reads.
	RefuseHooksFileInvalid exit.Name = "hooks-file-invalid"

	// Session: the loop's refused record, after the spawn and before any
	// model request.
	RefuseContextUnreadable       exit.Name = "b10x-context-unreadable"
	RefuseAPIKeySecretNotFound    exit.Name = "api-key-secret-not-found"
	RefuseAPIKeySecretUnavailable exit.Name = "api-key-secret-unavailable"
	RefuseB10xRefused             exit.Name = "b10x-refused"
)
