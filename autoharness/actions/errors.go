package actions

// The codes of a DispatchError.
const (
	CodeMissingEnvironmentValue = "MISSING_ENVIRONMENT_VALUE"
	CodeInvalidInteger          = "INVALID_INTEGER"
	CodeInvalidRequiredLabels   = "INVALID_REQUIRED_LABELS"
	CodeInvalidConcurrencyID    = "INVALID_CONCURRENCY_ID"
	CodeInvalidMetadata         = "INVALID_METADATA"
	CodeInvalidHarnessURL       = "INVALID_HARNESS_URL"
	CodeInvalidTarget           = "INVALID_TARGET"
	CodeInvalidFallbacks        = "INVALID_FALLBACKS"
	// CodeInvalidOperation: HARNESS_OPERATION names no operation (Run).
	CodeInvalidOperation = "INVALID_OPERATION"
	// CodeUnusedInput: an input was given that the operation does not use
	// (Run), which would otherwise be silently ignored.
	CodeUnusedInput = "UNUSED_INPUT"
)

// DispatchError is an input the Action refuses.
type DispatchError struct {
	Code    string
	Message string
}

func (e *DispatchError) Error() string { return e.Message }

func refuse(code, message string) *DispatchError {
	return &DispatchError{Code: code, Message: message}
}
