package live

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"

	"github.com/cairnmq/cairn/session"
	"github.com/cairnmq/cairn/wire"
)

// HTTPAuth says which credential the HTTP port requires beyond its open
// paths.
type HTTPAuth uint8

// HTTP authentication settings. The zero value is the safe default.
const (
	HTTPAuthClient HTTPAuth = 0 // a client or admin credential
	HTTPAuthAdmin  HTTPAuth = 1 // an admin credential
	HTTPAuthNone   HTTPAuth = 2 // nothing: anyone who reaches the port
)

// RoleCertURI is the URI a client certificate carries, as a subject
// alternative name, to name its role: cairn://role/client or
// cairn://role/admin. A certificate from the cluster CA that names no
// role and no node is a client's.
func RoleCertURI(r session.Role) *url.URL {
	return &url.URL{Scheme: "cairn", Host: "role", Path: "/" + r.String()}
}

// certRole returns the role a verified certificate grants: a node's
// certificate is a peer's, one naming the admin or client role grants
// that role, and one naming nothing is a client's.
func certRole(cert *x509.Certificate) session.Role {
	admin, client := RoleCertURI(session.RoleAdmin).String(), RoleCertURI(session.RoleClient).String()
	role := session.RoleClient
	for _, u := range cert.URIs {
		switch {
		case u.Scheme == "cairn" && u.Host == "node":
			return session.RolePeer
		case u.String() == admin:
			role = session.RoleAdmin
		case u.String() == client && role != session.RoleAdmin:
			role = session.RoleClient
		}
	}
	return role
}

// checkClientCert requires the certificate a TLS client presented to
// grant the role it claims: an admin's certificate may connect as a
// client too, never the reverse, and a node's certificate is for the
// peer port only.
func checkClientCert(tc *tls.Conn, claimed session.Role) error {
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return fmt.Errorf("the client presented no certificate")
	}
	granted := certRole(certs[0])
	switch {
	case granted == session.RolePeer:
		return fmt.Errorf("certificate %q is a node's; clients and admins need their own", certs[0].Subject.CommonName)
	case claimed == session.RoleAdmin && granted != session.RoleAdmin:
		return fmt.Errorf("certificate %q does not name the admin role (%s)", certs[0].Subject.CommonName, RoleCertURI(session.RoleAdmin))
	}
	return nil
}

// adminOnly names what m does if only an admin may do it, or returns ""
// for requests any client may send. These are the requests that change
// the cluster for everyone: removing a queue and its messages, the
// failure detection policy every node follows, where a queue is owned,
// and which nodes are members. Reading the member list (MemberList)
// changes nothing and is open to every authenticated client.
func adminOnly(m wire.Message) string {
	switch m.(type) {
	case *wire.DeleteQueue:
		return "deleting a queue"
	case *wire.SetDetection:
		return "changing the failure detection policy"
	case *wire.MoveOwner:
		return "moving a queue's owner"
	case *wire.AddNode:
		return "adding a node to the cluster"
	case *wire.RemoveNode:
		return "removing a node from the cluster"
	}
	return ""
}

// permissionDenied is the reply to a request the connection's role does
// not allow. The node never sees the request, so the client may be sure
// nothing was done.
func permissionDenied(reqID uint64, what string) *wire.Reply {
	return &wire.Reply{ReqID: reqID, Status: wire.StatusBadRequest,
		Detail: fmt.Sprintf("permission denied: %s needs the admin role; connect with the admin credential", what)}
}
