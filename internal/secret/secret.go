// Package secret reads what longhaul's servers and clients authenticate
// with, one way for all of them: the pre-shared token of serve, test and
// the exporter, and the TLS 1.3 certificate and key of serve and the
// exporter. Every file is read bounded, and only if it is a regular
// file: /dev/zero or a FIFO given by mistake gets an error, not a
// process that eats its memory or hangs before it handles a signal.
//
// One rule for what is whose to fix: a file that could not be opened or
// read is the run's failure (the *fs.PathError is kept: exit 1, as a
// missing input file is for every command); a file of the wrong kind or
// content (not regular, too large, not a token, not PEM, a bad pin) is
// the user's input (marked with badinput: exit 2).
package secret

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unicode"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/filekind"
)

// Limits.
const (
	// MinTokenLen is the shortest token accepted (bytes, after trimming
	// white space): 16 random bytes is the least that resists guessing.
	MinTokenLen = 16
	// MaxTokenFile bounds a token file.
	MaxTokenFile = 4096
	// MaxPEMFile bounds a certificate or key file.
	MaxPEMFile = 1 << 20
)

// readBounded reads a regular file of at most max bytes. The file is
// opened without blocking (a FIFO would wait for a writer) and checked
// before anything is read.
func readBounded(what, path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, badinput.Errorf("%s %s is not a regular file (%s): give a file", what, path, filekind.Of(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(b)) > max {
		return nil, badinput.Errorf("%s %s is larger than %d bytes: it cannot be one", what, path, max)
	}
	return b, nil
}

// ReadToken reads a pre-shared token: a regular file of at most 4 KiB
// holding one word of at least MinTokenLen bytes (white space around it
// is trimmed).
func ReadToken(path string) ([]byte, error) {
	b, err := readBounded("token file", path, MaxTokenFile)
	if err != nil {
		return nil, err
	}
	tok := strings.TrimSpace(string(b))
	if strings.ContainsFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return nil, badinput.Errorf("token file %s: want one word without spaces or line breaks; make one with: head -c 32 /dev/urandom | base64 > %s", path, path)
	}
	if len(tok) < MinTokenLen {
		return nil, badinput.Errorf("token file %s: the token has %d bytes, at least %d are needed; make one with: head -c 32 /dev/urandom | base64 > %s", path, len(tok), MinTokenLen, path)
	}
	return []byte(tok), nil
}

// Warning says when a token file is readable by others ("" if not).
func Warning(path string) string {
	st, err := os.Stat(path)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("token file %s is readable by group or others (mode %v): chmod 600 %s", path, st.Mode().Perm(), path)
	}
	return ""
}

// ServerTLS loads a PEM certificate and key into a TLS 1.3 server
// configuration, and returns the pin of its key (SPKIPin).
func ServerTLS(certFile, keyFile string) (*tls.Config, string, error) {
	cert, err := readBounded("tls certificate", certFile, MaxPEMFile)
	if err != nil {
		return nil, "", err
	}
	key, err := readBounded("tls key", keyFile, MaxPEMFile)
	if err != nil {
		return nil, "", err
	}
	c, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, "", badinput.Errorf("tls: %s and %s: %w", certFile, keyFile, err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil, "", badinput.Errorf("tls: %s: %w", certFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS13}, SPKIPin(leaf), nil
}

// SPKIPin is the pin of a certificate: "sha256:" and the hex SHA-256 of
// its SubjectPublicKeyInfo (what serve prints and test --tls-pin takes).
func SPKIPin(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ClientTLS accepts only a server whose key has the pin (TLS 1.3): the
// certificate's names and issuer are not checked, the key is.
func ClientTLS(pin string) (*tls.Config, error) {
	pin = strings.ToLower(strings.TrimSpace(pin))
	if h, ok := strings.CutPrefix(pin, "sha256:"); !ok || len(h) != 64 {
		return nil, badinput.Errorf("tls pin %q: want sha256: and 64 hex digits, as longhaul serve prints it", pin)
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
