package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// The proofs of the handshake (steps 2 and 3 of the package comment).

// NewNonce is a fresh nonce of NonceLen random bytes.
func NewNonce() []byte {
	b := make([]byte, NonceLen)
	_, _ = rand.Read(b) // documented never to fail (Go 1.24+)
	return b
}

// mac is HMAC-SHA256 with the token over a label and length-prefixed
// fields: no two different inputs give the same message.
func mac(token []byte, label string, fields ...[]byte) []byte {
	h := hmac.New(sha256.New, token)
	var n [4]byte
	for _, f := range append([][]byte{[]byte(label)}, fields...) {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return h.Sum(nil)
}

// ClientMAC is what the client proves: the token, bound to this
// connection's nonces and what it is for.
func ClientMAC(token, serverNonce []byte, a Auth) []byte {
	return mac(token, "longhaul-test v1 client", serverNonce, a.ClientNonce, []byte(a.Purpose), []byte(a.Session),
		[]byte(fmt.Sprint(a.Phase)), []byte(fmt.Sprint(a.Stream)))
}

// ServerMAC is what the server proves back.
func ServerMAC(token, serverNonce, clientNonce []byte) []byte {
	return mac(token, "longhaul-test v1 server", serverNonce, clientNonce)
}

// CheckMAC compares in constant time.
func CheckMAC(got, want []byte) bool { return hmac.Equal(got, want) }
