//go:build linux

package twohost

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
)

// selfSigned is a throwaway certificate for the server and its pin.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "longhaul test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS13}
	return cfg, secret.SPKIPin(leaf)
}

func TestTLSPinned(t *testing.T) {
	srvTLS, pin := selfSigned(t)
	addr := servertest.Start(t, server.ServerConfig{TLS: srvTLS, HandshakeTimeout: 500 * time.Millisecond})
	run := func(pin string) error {
		cfg, err := secret.ClientTLS(pin)
		if err != nil {
			return err
		}
		_, err = Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, TLS: cfg, Download: true, Upload: true,
			Duration: 300 * time.Millisecond, Snapshot: servertest.FakeSnap})
		return err
	}
	t.Run("the pinned key", func(t *testing.T) {
		if err := run(pin); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		_, other := selfSigned(t)
		err := run(other)
		if err == nil || !strings.Contains(err.Error(), "not the pinned") {
			t.Fatalf("got %v; want the pin refused", err)
		}
	})
	t.Run("plain TCP to a TLS server", func(t *testing.T) {
		_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true, Duration: 300 * time.Millisecond, Snapshot: servertest.FakeSnap})
		if err == nil {
			t.Fatal("a plain client got through a TLS server")
		}
	})
	t.Run("bad pin syntax", func(t *testing.T) {
		if _, err := secret.ClientTLS("md5:abc"); err == nil {
			t.Fatal("accepted a malformed pin")
		}
	})
}
