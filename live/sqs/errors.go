package sqs

import (
	"fmt"
	"net/http"
)

// apiError is an error as SQS reports it. shape is the modelled error's
// name, which the JSON protocol sends in __type and SDKs match to a
// typed error; code is the legacy code the query protocol sends and the
// JSON protocol repeats in X-Amzn-Query-Error, which SDKs report as the
// error code. Errors SQS does not model (authentication, validation)
// use their code as their shape.
type apiError struct {
	shape   string
	code    string
	status  int
	sender  bool // the caller's fault, not the service's
	message string
}

// Error implements error.
func (e *apiError) Error() string { return e.code + ": " + e.message }

// fault is the query protocol's word for who is at fault.
func (e *apiError) fault() string {
	if e.sender {
		return "Sender"
	}
	return "Receiver"
}

func senderError(shape, code string, status int, msg string) *apiError {
	return &apiError{shape: shape, code: code, status: status, sender: true, message: msg}
}

// Authentication errors, with the codes and statuses SQS answers.

func errMissingToken() *apiError {
	return senderError("MissingAuthenticationToken", "MissingAuthenticationToken", http.StatusForbidden,
		"the request must carry an Authorization header signed with Signature Version 4")
}

func errUnsupportedAuth(msg string) *apiError {
	return senderError("MissingAuthenticationToken", "MissingAuthenticationToken", http.StatusForbidden, msg)
}

func errIncompleteSignature(msg string) *apiError {
	return senderError("IncompleteSignature", "IncompleteSignature", http.StatusBadRequest, msg)
}

func errInvalidClientTokenID() *apiError {
	return senderError("InvalidClientTokenId", "InvalidClientTokenId", http.StatusForbidden,
		"The security token included in the request is invalid: the access key ID is not configured on this endpoint")
}

func errSignatureDoesNotMatch() *apiError {
	return errSignatureDoesNotMatchMsg("The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method.")
}

func errSignatureDoesNotMatchMsg(msg string) *apiError {
	return senderError("SignatureDoesNotMatch", "SignatureDoesNotMatch", http.StatusForbidden, msg)
}

func errRequestExpired(msg string) *apiError {
	return senderError("RequestExpired", "RequestExpired", http.StatusBadRequest, msg)
}

func errAccessDenied(msg string) *apiError {
	return senderError("AccessDenied", "AccessDenied", http.StatusForbidden, msg)
}

// Request errors.

func errInvalidAction(action string) *apiError {
	return senderError("InvalidAction", "InvalidAction", http.StatusBadRequest,
		fmt.Sprintf("The action %s is not valid for this endpoint.", action))
}

func errMissingParameter(name string) *apiError {
	return senderError("MissingParameter", "MissingParameter", http.StatusBadRequest,
		fmt.Sprintf("The request must contain the parameter %s.", name))
}

func errInvalidParameter(format string, args ...any) *apiError {
	return senderError("InvalidParameterValue", "InvalidParameterValue", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errMalformed(format string, args ...any) *apiError {
	return senderError("MalformedQueryString", "MalformedQueryString", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errUnsupported(format string, args ...any) *apiError {
	return senderError("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errInvalidAttributeName(format string, args ...any) *apiError {
	return senderError("InvalidAttributeName", "InvalidAttributeName", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errInvalidAttributeValue(format string, args ...any) *apiError {
	return senderError("InvalidAttributeValue", "InvalidAttributeValue", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errNoQueue(name string) *apiError {
	return senderError("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest,
		fmt.Sprintf("The specified queue %q does not exist.", name))
}

func errQueueExists(name string) *apiError {
	return senderError("QueueNameExists", "QueueAlreadyExists", http.StatusBadRequest,
		fmt.Sprintf("A queue named %q already exists with different attributes.", name))
}

func errReceiptHandle(format string, args ...any) *apiError {
	return senderError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

func errInvalidMessage(format string, args ...any) *apiError {
	return senderError("InvalidMessageContents", "InvalidMessageContents", http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// Batch errors.

func errEmptyBatch() *apiError {
	return senderError("EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", http.StatusBadRequest,
		"There should be at least one entry in the request.")
}

func errTooManyEntries(n int) *apiError {
	return senderError("TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", http.StatusBadRequest,
		fmt.Sprintf("Maximum number of entries per request are %d. You have sent %d.", batchEntriesMax, n))
}

func errIDsNotDistinct(id string) *apiError {
	return senderError("BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", http.StatusBadRequest,
		fmt.Sprintf("Id %s repeated.", id))
}

func errInvalidBatchID(id string) *apiError {
	return senderError("InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", http.StatusBadRequest,
		fmt.Sprintf("A batch entry id can only contain alphanumeric characters, hyphens and underscores, at most 80 of them; %q does not.", id))
}

func errBatchTooLong(n int) *apiError {
	return senderError("BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", http.StatusBadRequest,
		fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", messageBytesMax, n))
}

// Service errors: SDKs retry these.

func errUnavailable(msg string) *apiError {
	return &apiError{shape: "ServiceUnavailable", code: "ServiceUnavailable", status: http.StatusServiceUnavailable, message: msg}
}

func errInternal(msg string) *apiError {
	return &apiError{shape: "InternalFailure", code: "InternalFailure", status: http.StatusInternalServerError, message: msg}
}
