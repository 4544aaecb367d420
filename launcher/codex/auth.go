package codex

import (
	"bytes"
	"encoding/json"

	"github.com/metaharness/metaharness/exit"
)

// TokenFile reads a --token-file for the loopback proxy: a file holding the
// token itself, or a codex auth.json. Of an auth.json only an API-key login
// is carried (its OPENAI_API_KEY); a ChatGPT-plan login (auth_mode other
// than apikey, or a tokens object) is refused by name. app-server cannot
// tell the two apart under a custom provider (account/read answers
// account:null either way), so the file itself is read.
func TokenFile(data []byte) (string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return string(data), nil
	}
	var auth struct {
		AuthMode *string         `json:"auth_mode"`
		APIKey   *string         `json:"OPENAI_API_KEY"`
		Tokens   json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(trimmed, &auth); err != nil {
		return "", exit.Refuse(RefuseAuthFileUnusable, "it starts like a codex auth.json but is not JSON (%v); give a file holding the API key, or an auth.json written by `codex login --with-api-key`", err)
	}
	mode := "apikey"
	if auth.AuthMode != nil {
		mode = *auth.AuthMode
	}
	if mode != "apikey" || (len(auth.Tokens) > 0 && string(auth.Tokens) != "null") {
		return "", exit.Refuse(RefuseChatgptLogin, "it is a codex auth.json of a ChatGPT-plan login (auth_mode %q%s); metaharness carries only API-key custody through the loopback proxy; log in with `codex login --with-api-key`, or name the key with --token-env", mode, tokensClause(auth.Tokens))
	}
	if auth.APIKey == nil || *auth.APIKey == "" {
		return "", exit.Refuse(RefuseAuthFileUnusable, "it is a codex auth.json with no OPENAI_API_KEY; write the key into it with `codex login --with-api-key`, or name it with --token-env")
	}
	return *auth.APIKey, nil
}

func tokensClause(tokens json.RawMessage) string {
	if len(tokens) > 0 && string(tokens) != "null" {
		return ", a tokens object"
	}
	return ""
}
