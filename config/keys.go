package config

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
)

// KeyRef is one verification key, read from a file.
type KeyRef struct {
	KID  string `yaml:"kid"`
	Alg  string `yaml:"alg"`  // pinned: a token signed with another algorithm fails
	File string `yaml:"file"` // made absolute by Parse
	// PEM is the file's contents: a PEM public key ("PUBLIC KEY", "RSA PUBLIC KEY") or certificate
	// for RS*, PS*, ES* and EdDSA; the raw secret, surrounding whitespace trimmed, for HS*.
	PEM []byte `yaml:"-"`
}

// PublicAlgs and HMACAlgs are the supported values of KeyRef.Alg.
func PublicAlgs() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

func HMACAlgs() []string { return []string{"HS256", "HS384", "HS512"} }

// IsHMAC tells whether the key is a shared secret rather than a public key.
func (k KeyRef) IsHMAC() bool { return slices.Contains(HMACAlgs(), k.Alg) }

// minSecret is the least number of bytes of an HMAC secret (256 bits, as HS256 wants).
const minSecret = 32

type keyRules struct {
	kidRequired bool
	allowHMAC   bool
}

func checkKeys(ch *checker, path string, keys []KeyRef, rules keyRules) {
	kids := map[string]int{}
	for i, k := range keys {
		p := index(path, i)
		switch {
		case k.KID == "" && rules.kidRequired:
			ch.add(p+".kid", "required: the kid tokens signed with this key carry")
		case k.KID != "":
			if j, dup := kids[k.KID]; dup {
				ch.add(p+".kid", "duplicate kid %q (also %s)", k.KID, index(path, j))
			} else {
				kids[k.KID] = i
			}
		}
		algs := PublicAlgs()
		if rules.allowHMAC {
			algs = append(algs, HMACAlgs()...)
		}
		if !slices.Contains(algs, k.Alg) {
			if k.Alg == "" {
				ch.add(p+".alg", "required: one of %s", strings.Join(algs, ", "))
			} else {
				ch.add(p+".alg", "unsupported alg %q: use one of %s", k.Alg, strings.Join(algs, ", "))
			}
			continue
		}
		switch {
		case k.File == "" && len(k.PEM) == 0:
			ch.add(p+".file", "required")
		case len(k.PEM) == 0:
			// unreadable: already reported
		case k.IsHMAC():
			if len(bytes.TrimSpace(k.PEM)) < minSecret {
				ch.add(p+".file", "an %s secret must hold at least %d bytes", k.Alg, minSecret)
			}
		default:
			if msg := checkPublicKey(k.PEM, k.Alg); msg != "" {
				ch.add(p+".file", "%s", msg)
			}
		}
	}
}

// checkPublicKey tells what is wrong with data as the key for alg, or "" when nothing is.
func checkPublicKey(data []byte, alg string) string {
	key, msg := parsePublicKey(data)
	if msg != "" {
		return msg
	}
	want, ok := "", false
	switch alg[:2] {
	case "RS", "PS":
		_, ok = key.(*rsa.PublicKey)
		want = "an RSA"
	case "ES":
		curve := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		ec, isEC := key.(*ecdsa.PublicKey)
		ok = isEC && ec.Curve == curve
		want = "an ECDSA " + curve.Params().Name
	case "Ed":
		_, ok = key.(ed25519.PublicKey)
		want = "an Ed25519"
	}
	if !ok {
		return fmt.Sprintf("alg %s needs %s public key; the file holds %s", alg, want, describeKey(key))
	}
	return ""
}

func parsePublicKey(data []byte) (any, string) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, "holds no PEM public key or certificate"
		}
		switch block.Type {
		case "PUBLIC KEY":
			key, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				return nil, "holds a PUBLIC KEY block that does not parse"
			}
			return key, ""
		case "RSA PUBLIC KEY":
			key, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, "holds an RSA PUBLIC KEY block that does not parse"
			}
			return key, ""
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, "holds a CERTIFICATE block that does not parse"
			}
			return cert.PublicKey, ""
		}
		if strings.Contains(block.Type, "PRIVATE KEY") {
			return nil, "holds a private key: give edge the public key only (openssl pkey -pubout)"
		}
	}
}

func describeKey(key any) string {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return "an RSA key"
	case *ecdsa.PublicKey:
		return "an ECDSA " + k.Curve.Params().Name + " key"
	case ed25519.PublicKey:
		return "an Ed25519 key"
	}
	return fmt.Sprintf("a %T", key)
}

func isJWKS(data []byte) bool {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	return json.Unmarshal(data, &set) == nil && len(set.Keys) > 0
}
