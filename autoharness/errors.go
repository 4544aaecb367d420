package autoharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// The codes this package gives an error itself. A control plane's own codes
// (VALIDATION_ERROR, NOT_FOUND, CONFLICT, DRAINING, …) come through as the
// server sent them.
const (
	// CodeHTTPError: the server's answer was not a success and named no code.
	CodeHTTPError = "HTTP_ERROR"
	// CodeRequestTimeout: a request's deadline passed (RequestTimeoutError).
	CodeRequestTimeout = "REQUEST_TIMEOUT"
	// CodeDrainWaitTimeout: WaitForSessionDrain's budget ran out
	// (DrainWaitTimeoutError).
	CodeDrainWaitTimeout = "DRAIN_WAIT_TIMEOUT"
	// CodeDraining: a session could not be admitted because this principal's
	// session drain fences the repository; Error.OperationID and
	// Error.StatusURL name the drain to follow.
	CodeDraining = "DRAINING"

	CodeUnknownProviderName     = "UNKNOWN_PROVIDER_NAME"
	CodeUnknownCommandName      = "UNKNOWN_COMMAND_NAME"
	CodeUnknownRepositoryName   = "UNKNOWN_REPOSITORY_NAME"
	CodeAmbiguousProviderName   = "AMBIGUOUS_PROVIDER_NAME"
	CodeAmbiguousCommandName    = "AMBIGUOUS_COMMAND_NAME"
	CodeAmbiguousRepositoryName = "AMBIGUOUS_REPOSITORY_NAME"
)

// Error is the control plane's refusal of a request (any status outside
// 2xx), or a name this package could not resolve (status 400).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the server's error code, else CodeHTTPError.
	Code string
	// Message is the server's error message, else "Auto Harness request
	// failed (<status>)".
	Message string
	// RetryAfter is the answer's Retry-After header, "" when it had none.
	RetryAfter string
	// OperationID and StatusURL name the session drain a DRAINING refusal
	// points at (StatusURL relative to the API, e.g.
	// /api/v1/repositories/r/session-drains/d).
	OperationID string
	StatusURL   string
	// Details is the server's whole error object as it sent it (its
	// dependencies, for one), nil when the answer carried none.
	Details json.RawMessage
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s (HTTP %d, %s)", e.Message, e.Status, e.Code)
}

// Extra is Details without its code and message, in the server's key
// order (a refused delete's dependencies, a DRAINING refusal's operation),
// nil when the error object holds nothing else.
func (e *Error) Extra() json.RawMessage {
	var b bytes.Buffer
	err := jsonscan.Members(e.Details, func(key, val []byte) {
		if k := string(key); k == "code" || k == "message" {
			return
		}
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		name, _ := Encode(string(key))
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	})
	if err != nil || b.Len() == 0 {
		return nil
	}
	b.WriteByte('}')
	return b.Bytes()
}

// RequestTimeoutError is a request whose deadline passed before its whole
// answer was read.
type RequestTimeoutError struct {
	// Timeout is the deadline the request had.
	Timeout time.Duration
}

func (e *RequestTimeoutError) Error() string {
	return "Auto Harness request timed out after " + millis(e.Timeout) + "ms"
}

// Code is CodeRequestTimeout.
func (e *RequestTimeoutError) Code() string { return CodeRequestTimeout }

// DrainWaitTimeoutError is a WaitForSessionDrain whose budget ran out
// before the drain reached a terminal status, including when the request
// cut short to fit the budget is what timed out.
type DrainWaitTimeoutError struct {
	// Repository is the repository as far as it was resolved: its id once
	// known, else the reference the caller gave.
	Repository  RepositoryRef
	OperationID string
	// Timeout is the wait's whole budget.
	Timeout time.Duration
}

func (e *DrainWaitTimeoutError) Error() string {
	return "Auto Harness session drain wait timed out after " + millis(e.Timeout) + "ms"
}

// Code is CodeDrainWaitTimeout.
func (e *DrainWaitTimeoutError) Code() string { return CodeDrainWaitTimeout }

// ErrorCode is the code of the first *Error, *RequestTimeoutError or
// *DrainWaitTimeoutError in err's chain, "" when there is none.
func ErrorCode(err error) string {
	var e *Error
	var rt *RequestTimeoutError
	var dw *DrainWaitTimeoutError
	switch {
	case errors.As(err, &e):
		return e.Code
	case errors.As(err, &rt):
		return rt.Code()
	case errors.As(err, &dw):
		return dw.Code()
	}
	return ""
}

// The paging refusals of a catalogue listing (ListProviders,
// ListCommands) and of a repository name's look-up; errors.Is finds them
// in the error, which names the route.
var (
	ErrRepeatedCursor = errors.New("repeated pagination cursor")
	ErrTooManyPages   = errors.New("pagination exceeded 20 pages")
)

// millis is d in milliseconds as a number is written: 30000, 1.5.
func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)
}

// errorFromAnswer is the *Error for an answer of status with body.
func errorFromAnswer(status int, retryAfter string, body []byte) *Error {
	e := &Error{Status: status, Code: CodeHTTPError, Message: fmt.Sprintf("Auto Harness request failed (%d)", status), RetryAfter: retryAfter}
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &envelope) != nil || len(envelope.Error) == 0 || envelope.Error[0] != '{' {
		return e
	}
	var fields struct {
		Code        json.RawMessage `json:"code"`
		Message     json.RawMessage `json:"message"`
		OperationID json.RawMessage `json:"operationId"`
		StatusURL   json.RawMessage `json:"statusUrl"`
	}
	if json.Unmarshal(envelope.Error, &fields) != nil {
		return e
	}
	e.Details = envelope.Error
	stringInto(fields.Code, &e.Code)
	stringInto(fields.Message, &e.Message)
	stringInto(fields.OperationID, &e.OperationID)
	stringInto(fields.StatusURL, &e.StatusURL)
	return e
}

// stringInto sets *s to raw when raw is a JSON string.
func stringInto(raw json.RawMessage, s *string) {
	var v string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &v) == nil {
		*s = v
	}
}
