// Package sqs is cairn's Amazon SQS-compatible endpoint: an HTTP handler
// that lets existing SQS clients (the AWS SDKs, the AWS CLI) use a cairn
// cluster with only an endpoint URL and access keys changed.
//
// It verifies AWS Signature Version 4 against the access keys it is
// configured with (each mapped to a cairn role), speaks both wire
// protocols SQS clients use (the JSON protocol, application/x-amz-json-1.0
// with X-Amz-Target: AmazonSQS.<Action>, and the query protocol,
// form-encoded with XML answers), and maps the actions onto a Backend.
// ClusterBackend is the Backend over cairn's Go client, so a request for a
// queue another node owns is forwarded by the client, and operations ride
// through a failover as the client's do.
//
// The mapping, in brief: a queue is a cairn queue of the same name
// (confirmation policy majority); SendMessage answers once the message is
// confirmed; ReceiveMessage hands out deliveries of a subscription whose
// lease is the visibility timeout; DeleteMessage is a durable ack;
// ChangeMessageVisibility to 0 is a nack. A message's body, attributes,
// send time and sender are stored together in the cairn payload. Receipt
// handles name the delivery by the receiving endpoint's lease and by the
// message and its owner's lease, under an HMAC keyed by a secret derived
// from the access keys, so every node's endpoint takes every handle: one
// that did not receive the message acts on it at the queue's owner.
package sqs
