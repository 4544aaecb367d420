package codex

import "github.com/metaharness/metaharness/exit"

// Refusal names of the codex launch (exit 2, before the spawn).
const (
	// RefuseChatgptLogin: the token source is a ChatGPT-plan codex login;
	// only API-key custody is carried.
	RefuseChatgptLogin exit.Name = "codex-chatgpt-login"
	// RefuseAuthFileUnusable: the token source is a codex auth.json that
	// holds no API key.
	RefuseAuthFileUnusable exit.Name = "codex-auth-file-unusable"
	// RefuseModelUnconstrained: the model's catalog entry carries a field
	// this build cannot neutralise, so the model might be offered more than
	// the run's tools.
	RefuseModelUnconstrained exit.Name = "codex-model-unconstrained"
	// RefuseModelsUnreadable: `codex debug models --bundled` did not answer
	// with the bundled catalog.
	RefuseModelsUnreadable exit.Name = "codex-models-unreadable"
	// RefuseNativeBinaryMissing: the codex on the child's PATH is the node
	// wrapper, and its native binary is not where npm installs it.
	RefuseNativeBinaryMissing exit.Name = "codex-native-binary-missing"
	// RefuseConfigRejected: the pinned binary refused the planned
	// config.toml under --strict-config.
	RefuseConfigRejected exit.Name = "codex-config-rejected"
	// RefuseOptionUnsupported: a run flag app-server has no knob for.
	RefuseOptionUnsupported exit.Name = "codex-option-unsupported"
)
