//go:build linux

package twohost

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// MinTokenLen is the shortest pre-shared token accepted (secret.ReadToken
// reads them).
const MinTokenLen = secret.MinTokenLen

func newNonce() []byte {
	b := make([]byte, wire.NonceLen)
	_, _ = rand.Read(b) // documented never to fail (Go 1.24+)
	return b
}

func newSessionID() string { return hex.EncodeToString(newNonce()[:16]) }

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

// clientMAC is what the client proves: the token, bound to this
// connection's nonces and what it is for.
func clientMAC(token, serverNonce []byte, a wire.Auth) []byte {
	return mac(token, "longhaul-test v1 client", serverNonce, a.ClientNonce, []byte(a.Purpose), []byte(a.Session),
		[]byte(fmt.Sprint(a.Phase)), []byte(fmt.Sprint(a.Stream)))
}

// serverMAC is what the server proves back.
func serverMAC(token, serverNonce, clientNonce []byte) []byte {
	return mac(token, "longhaul-test v1 server", serverNonce, clientNonce)
}

// checkMAC compares in constant time.
func checkMAC(got, want []byte) bool { return hmac.Equal(got, want) }
