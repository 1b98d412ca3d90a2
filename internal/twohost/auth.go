//go:build linux

package twohost

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinTokenLen is the shortest pre-shared token accepted (bytes, after
// trimming white space): 16 random bytes written as 32 hex digits is the
// least that resists guessing.
const MinTokenLen = 16

// LoadToken reads the pre-shared token from a file: its content with
// surrounding white space trimmed.
func LoadToken(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if st.Size() > 4096 {
		return nil, fmt.Errorf("token file %s: %d bytes is not a token (at most 4096)", path, st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	tok := []byte(strings.TrimSpace(string(b)))
	if len(tok) < MinTokenLen {
		return nil, fmt.Errorf("token file %s: the token has %d bytes, at least %d are needed; make one with: head -c 32 /dev/urandom | base64 > %s", path, len(tok), MinTokenLen, path)
	}
	return tok, nil
}

// TokenFileWarning says when a token file is readable by others.
func TokenFileWarning(path string) string {
	st, err := os.Stat(path)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("token file %s is readable by group or others (mode %v): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	return ""
}

func newNonce() []byte {
	b := make([]byte, nonceLen)
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
func clientMAC(token, serverNonce []byte, a Auth) []byte {
	return mac(token, "longhaul-test v1 client", serverNonce, a.ClientNonce, []byte(a.Purpose), []byte(a.Session),
		[]byte(fmt.Sprint(a.Phase)), []byte(fmt.Sprint(a.Stream)))
}

// serverMAC is what the server proves back.
func serverMAC(token, serverNonce, clientNonce []byte) []byte {
	return mac(token, "longhaul-test v1 server", serverNonce, clientNonce)
}

// checkMAC compares in constant time.
func checkMAC(got, want []byte) bool { return hmac.Equal(got, want) }

// SPKIPin is the pin of a certificate: "sha256:" and the hex SHA-256 of
// its SubjectPublicKeyInfo (what serve prints and test --tls-pin takes).
func SPKIPin(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ServerTLS loads a certificate and key for TLS 1.3 only.
func ServerTLS(certFile, keyFile string) (*tls.Config, string, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("tls: %w", err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil, "", fmt.Errorf("tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS13}, SPKIPin(leaf), nil
}

// ClientTLS accepts only a server whose key has the pin (TLS 1.3): the
// certificate's names and issuer are not checked, the key is.
func ClientTLS(pin string) (*tls.Config, error) {
	pin = strings.ToLower(strings.TrimSpace(pin))
	if h, ok := strings.CutPrefix(pin, "sha256:"); !ok || len(h) != 64 {
		return nil, fmt.Errorf("tls pin %q: want sha256: and 64 hex digits, as longhaul serve prints it", pin)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // replaced by the pin check below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the server sent no certificate")
			}
			c, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			if got := SPKIPin(c); got != pin {
				return fmt.Errorf("the server's key is %s, not the pinned %s", got, pin)
			}
			return nil
		},
	}, nil
}
