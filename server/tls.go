package server

// TLS, with Redis's tls-* settings: a TLS listener beside the plain-text
// one (tls-port beside port), client certificates verified against a CA
// (tls-auth-clients), protocol versions and cipher lists, the replication
// link (tls-replication), and reloading: CONFIG SET of any tls-* setting
// (or ReloadTLS) builds a new configuration from every setting and, only
// if all of it loads, swaps it in for the handshakes that follow.
// Connections already open keep the configuration they were made with.
//
// What Go's crypto/tls cannot express is refused with an error naming
// what it can: TLS 1.0 and 1.1 (broken, and disabled by Go), OpenSSL
// cipher-string keywords (HIGH, !aNULL), a TLS 1.3 cipher-suite list
// other than Go's whole set (Go always offers all three), and encrypted
// private keys (tls-key-file-pass).

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
)

// tlsParams are the tls-* settings by Redis's names (every name of
// tlsDefaults present). A stored tlsParams is never modified: changes
// copy it.
type tlsParams map[string]string

// tlsDefaults are Redis's defaults. tls-cert-file and tls-key-file are
// Config.TLSCert and TLSKey; tls-port is the listener (Config.TLSAddr).
var tlsDefaults = tlsParams{
	"tls-cert-file": "", "tls-key-file": "", "tls-key-file-pass": "",
	"tls-client-cert-file": "", "tls-client-key-file": "", "tls-client-key-file-pass": "",
	"tls-ca-cert-file": "", "tls-ca-cert-dir": "", "tls-dh-params-file": "",
	"tls-auth-clients": "yes", "tls-protocols": "", "tls-ciphers": "", "tls-ciphersuites": "",
	"tls-prefer-server-ciphers": "no", "tls-session-caching": "yes",
	"tls-session-cache-size": "20480", "tls-session-cache-timeout": "300",
	"tls-replication": "no", "tls-cluster": "no",
}

// TLSSettingNames are the tls-* settings Config.TLSParams, the config file
// and CONFIG GET/SET take (besides tls-port).
func TLSSettingNames() []string { return slices.Sorted(maps.Keys(tlsDefaults)) }

// isTLSSetting reports whether name is one of tlsDefaults.
func isTLSSetting(name string) bool { _, ok := tlsDefaults[name]; return ok }

// checkTLSSetting checks one setting's value on its own (the files are
// read when the whole configuration is built) and returns it as CONFIG
// GET shows it (yes/no, numbers without signs or units).
func checkTLSSetting(name, v string) (string, error) {
	switch name {
	case "tls-auth-clients":
		switch l := strings.ToLower(v); l {
		case "yes", "no", "optional":
			return l, nil
		}
		return "", fmt.Errorf("argument(s) must be one of the following: no, yes, optional")
	case "tls-prefer-server-ciphers", "tls-session-caching", "tls-replication", "tls-cluster":
		b, err := confval.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("argument must be 'yes' or 'no'")
		}
		return confval.FormatBool(b), nil
	case "tls-session-cache-size", "tls-session-cache-timeout":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("argument couldn't be parsed into an integer")
		}
		if n < 0 || n > 1<<31-1 {
			return "", fmt.Errorf("argument must be between 0 and 2147483647 inclusive")
		}
		return strconv.FormatInt(n, 10), nil
	case "tls-protocols":
		_, _, err := parseTLSProtocols(v)
		return v, err
	case "tls-ciphers":
		_, err := parseTLSCiphers(v)
		return v, err
	case "tls-ciphersuites":
		return v, checkTLS13Suites(v)
	case "tls-key-file-pass", "tls-client-key-file-pass":
		if v != "" {
			return "", fmt.Errorf("encrypted private keys are not supported: store the key decrypted (openssl pkey -in key.pem -out plain.pem) in a file only the server's user can read")
		}
		return v, nil
	}
	if _, ok := tlsDefaults[name]; !ok {
		return "", fmt.Errorf("unknown TLS setting %q", name)
	}
	return v, nil // file and directory names: read when the configuration is built
}

// parseTLSProtocols reads tls-protocols ("TLSv1.2 TLSv1.3", any case;
// empty: Redis's default, both) into Go's version range.
func parseTLSProtocols(v string) (lo, hi uint16, err error) {
	words := strings.Fields(v)
	if len(words) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, w := range words {
		var ver uint16
		switch strings.ToLower(w) {
		case "tlsv1.2":
			ver = tls.VersionTLS12
		case "tlsv1.3":
			ver = tls.VersionTLS13
		case "tlsv1", "tlsv1.1":
			return 0, 0, fmt.Errorf("%s is not supported (TLS 1.0 and 1.1 are deprecated by RFC 8996); use TLSv1.2 and TLSv1.3", w)
		default:
			return 0, 0, fmt.Errorf("invalid tls-protocols %q: use a combination of 'TLSv1.2' and 'TLSv1.3'", w)
		}
		if lo == 0 || ver < lo {
			lo = ver
		}
		hi = max(hi, ver)
	}
	return lo, hi, nil
}

// openSSLCipherNames maps OpenSSL's names of the TLS 1.2 cipher suites Go
// offers to Go's (IANA) names.
var openSSLCipherNames = map[string]string{
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
}

// tls12Suites are the TLS 1.2 cipher suites Go offers and considers
// secure, by Go's name.
func tls12Suites() map[string]uint16 {
	out := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		if slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
			out[cs.Name] = cs.ID
		}
	}
	return out
}

// parseTLSCiphers reads tls-ciphers, the TLS 1.2 cipher list: names
// separated by ':' (or ',' or spaces), OpenSSL's (ECDHE-RSA-AES128-GCM-SHA256)
// or Go's (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), in order of
// preference. Empty or DEFAULT: Go's default list. OpenSSL's keywords and
// operators (HIGH, !aNULL, +RSA, @STRENGTH) are refused: Go has no cipher
// string language.
func parseTLSCiphers(v string) ([]uint16, error) {
	words := strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
	if len(words) == 0 || len(words) == 1 && strings.EqualFold(words[0], "DEFAULT") {
		return nil, nil
	}
	suites := tls12Suites()
	var out []uint16
	for _, w := range words {
		name := w
		if n, ok := openSSLCipherNames[strings.ToUpper(w)]; ok {
			name = n
		}
		id, ok := suites[strings.ToUpper(name)]
		if !ok {
			var known []string
			for o, g := range openSSLCipherNames {
				if _, ok := suites[g]; ok {
					known = append(known, o)
				}
			}
			slices.Sort(known)
			return nil, fmt.Errorf("%q is not a TLS 1.2 cipher suite Go offers (OpenSSL keywords such as HIGH or !aNULL are not supported); name suites from: %s (or Go's TLS_... names)", w, strings.Join(known, ":"))
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// checkTLS13Suites accepts tls-ciphersuites only when it names every TLS
// 1.3 suite Go offers (in any order): Go neither restricts nor orders
// them.
func checkTLS13Suites(v string) error {
	words := strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
	if len(words) == 0 {
		return nil
	}
	var all []string
	for _, cs := range tls.CipherSuites() {
		if slices.Equal(cs.SupportedVersions, []uint16{tls.VersionTLS13}) {
			all = append(all, cs.Name)
		}
	}
	got := map[string]bool{}
	for _, w := range words {
		if !slices.Contains(all, strings.ToUpper(w)) {
			return fmt.Errorf("%q is not a TLS 1.3 cipher suite Go offers (%s)", w, strings.Join(all, ":"))
		}
		got[strings.ToUpper(w)] = true
	}
	if len(got) != len(all) {
		return fmt.Errorf("TLS 1.3 cipher suites cannot be restricted: Go's TLS always offers %s; leave tls-ciphersuites empty or name them all (or set tls-protocols TLSv1.2 and choose with tls-ciphers)", strings.Join(all, ":"))
	}
	return nil
}

// tlsConfigs are the configurations built from one tlsParams.
type tlsConfigs struct {
	params tlsParams
	server *tls.Config // for handshakes on the TLS listeners
	client *tls.Config // for the replication link to a master
}

// buildTLS reads the certificate, key and CA files and builds the
// configurations, as Redis's tlsConfigure: a cert and key are required,
// and a CA (file or directory) when clients are verified or the
// replication link uses TLS. Any error leaves nothing built.
func buildTLS(p tlsParams) (*tlsConfigs, error) {
	for name, v := range p {
		if _, err := checkTLSSetting(name, v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if p["tls-cert-file"] == "" {
		return nil, errors.New("no tls-cert-file configured")
	}
	if p["tls-key-file"] == "" {
		return nil, errors.New("no tls-key-file configured")
	}
	cert, err := tls.LoadX509KeyPair(p["tls-cert-file"], p["tls-key-file"])
	if err != nil {
		return nil, fmt.Errorf("tls-cert-file %s, tls-key-file %s: %w", p["tls-cert-file"], p["tls-key-file"], err)
	}
	auth := p["tls-auth-clients"]
	var cas *x509.CertPool
	if p["tls-ca-cert-file"] != "" || p["tls-ca-cert-dir"] != "" {
		if cas, err = loadCAs(p["tls-ca-cert-file"], p["tls-ca-cert-dir"]); err != nil {
			return nil, err
		}
	} else if auth != "no" || p["tls-replication"] == "yes" {
		// Without a CA Go would verify against the system's roots, which
		// would let any publicly issued certificate in.
		return nil, errors.New("either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-replication or tls-auth-clients are enabled (tls-auth-clients is yes by default, as in Redis; set it to no to serve clients without certificates)")
	}
	lo, hi, _ := parseTLSProtocols(p["tls-protocols"])
	suites, _ := parseTLSCiphers(p["tls-ciphers"])
	srv := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   lo, MaxVersion: hi,
		CipherSuites: suites,
		ClientCAs:    cas,
	}
	switch auth {
	case "yes":
		srv.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		srv.ClientAuth = tls.VerifyClientCertIfGiven
	}
	if p["tls-session-caching"] == "no" {
		srv.SessionTicketsDisabled = true
	} else {
		limitSessionAge(srv, p["tls-session-cache-timeout"])
	}
	// The replication link presents the client certificate, or the
	// server's when none is set, and checks the master's certificate
	// against the CA. Like Redis, it does not check the master's host
	// name: replicaof names an address, often an IP.
	clientCert := cert
	if p["tls-client-cert-file"] != "" && p["tls-client-key-file"] != "" {
		if clientCert, err = tls.LoadX509KeyPair(p["tls-client-cert-file"], p["tls-client-key-file"]); err != nil {
			return nil, fmt.Errorf("tls-client-cert-file %s, tls-client-key-file %s: %w", p["tls-client-cert-file"], p["tls-client-key-file"], err)
		}
	}
	cli := &tls.Config{
		Certificates: []tls.Certificate{clientCert},
		MinVersion:   lo, MaxVersion: hi,
		CipherSuites:       suites,
		InsecureSkipVerify: true, // the chain is verified below, the host name is not
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cas == nil {
				return errors.New("no tls-ca-cert-file or tls-ca-cert-dir to verify the master's certificate")
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the master sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: cas, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		},
	}
	return &tlsConfigs{params: p, server: srv, client: cli}, nil
}

// limitSessionAge makes cfg resume sessions no older than
// tls-session-cache-timeout seconds (Redis's session timeout): each
// ticket carries the time it was issued. Tickets are sealed with cfg's
// own keys (Go's, made for each configuration and rotated daily), so a
// session from before a reload is not resumed after it.
func limitSessionAge(cfg *tls.Config, timeout string) {
	secs, _ := strconv.ParseInt(timeout, 10, 64)
	maxAge := time.Duration(secs) * time.Second
	// The issue time is one entry of Extra, recognised by its prefix (the
	// field is shared with other layers); a resumed session keeps the
	// time of its first handshake, as OpenSSL's session timeout does.
	const tag = "bloomkit-issued:"
	born := func(ss *tls.SessionState) (time.Time, bool) {
		for _, e := range ss.Extra {
			if len(e) == len(tag)+8 && string(e[:len(tag)]) == tag {
				return time.Unix(int64(binary.BigEndian.Uint64(e[len(tag):])), 0), true
			}
		}
		return time.Time{}, false
	}
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		if _, ok := born(ss); !ok {
			ss.Extra = append(ss.Extra, binary.BigEndian.AppendUint64([]byte(tag), uint64(time.Now().Unix())))
		}
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(identity, cs)
		if err != nil || ss == nil {
			return nil, err
		}
		if t, ok := born(ss); !ok || time.Since(t) > maxAge {
			return nil, nil // a full handshake instead
		}
		return ss, nil
	}
}

// loadCAs reads the CA certificates of tls-ca-cert-file and of every file
// in tls-ca-cert-dir that holds PEM certificates (OpenSSL looks up
// hashed names there when verifying; here the directory is read whole
// when the configuration is built, so certificates added later need a
// reload).
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	add := func(path string, must bool) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("CA certificate: %w", err)
		}
		k, err := addPEMCerts(pool, data)
		if err != nil {
			return fmt.Errorf("CA certificate %s: %w", path, err)
		}
		if k == 0 && must {
			return fmt.Errorf("tls-ca-cert-file %s holds no PEM certificate", path)
		}
		n += k
		return nil
	}
	if file != "" {
		if err := add(file, true); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-dir: %w", err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() || e.Type()&os.ModeSymlink != 0 {
				if err := add(filepath.Join(dir, e.Name()), false); err != nil && e.Type().IsRegular() {
					return nil, err
				}
			}
		}
		if n == 0 && file == "" {
			return nil, fmt.Errorf("tls-ca-cert-dir %s holds no PEM certificate", dir)
		}
	}
	return pool, nil
}

// addPEMCerts adds the CERTIFICATE blocks of data to pool and counts
// them; a block that does not parse is an error.
func addPEMCerts(pool *x509.CertPool, data []byte) (int, error) {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return n, err
		}
		pool.AddCert(c)
		n++
	}
}

// initTLS records the tls-* settings of cfg (nothing is read yet).
func (s *Server) initTLS(cfg *Config) error {
	p := maps.Clone(tlsDefaults)
	for name, v := range cfg.TLSParams {
		n := strings.ToLower(name)
		if !isTLSSetting(n) {
			return fmt.Errorf("server: unknown TLS setting %q (known: %s)", name, strings.Join(TLSSettingNames(), ", "))
		}
		v, err := checkTLSSetting(n, v)
		if err != nil {
			return fmt.Errorf("server: %s: %w", n, err)
		}
		p[n] = v
	}
	if cfg.TLSCert != "" {
		p["tls-cert-file"] = cfg.TLSCert
	}
	if cfg.TLSKey != "" {
		p["tls-key-file"] = cfg.TLSKey
	}
	s.tlsParams.Store(&p)
	if cfg.TLSAddr == "" && p["tls-replication"] == "no" && (p["tls-cert-file"] != "" || p["tls-key-file"] != "") {
		s.log.Warn("tls-cert-file is set but there is no tls-port: no client is served over TLS (as in Redis, port is plain text; set tls-port, and port 0 for TLS only)")
	}
	return nil
}

// tlsInUse reports whether the TLS configuration must be built: a TLS
// listener, or the replication link over TLS (Redis's condition).
func (s *Server) tlsInUse(p tlsParams) bool {
	return s.tlsListening() || p["tls-replication"] == "yes"
}

// tlsSetting is CONFIG GET's value of a tls-* setting.
func (s *Server) tlsSetting(name string) string { return (*s.tlsParams.Load())[name] }

// setTLSSetting is CONFIG SET's first step: the value is checked and
// recorded; applyTLS (after every pair) builds the configuration.
func (s *Server) setTLSSetting(name, v string) error {
	v, err := checkTLSSetting(name, v)
	if err != nil {
		return errConfigValue(err.Error())
	}
	p := maps.Clone(*s.tlsParams.Load())
	p[name] = v
	s.tlsParams.Store(&p)
	return nil
}

// tlsBuild is a TLS configuration built from params, or the error that
// stopped it.
type tlsBuild struct {
	params tlsParams
	conf   *tlsConfigs
	err    error
}

// prepareTLS builds, with no lock held, the configuration a CONFIG SET
// of these settings and values will put in force (tlsMu held): the
// files are read here, so that a slow file (a FIFO, a network file
// system) holds no other client up.
func (s *Server) prepareTLS(sets []*setting, vals []string) *tlsBuild {
	p := maps.Clone(*s.tlsParams.Load())
	for i, st := range sets {
		if st.tls {
			v, err := checkTLSSetting(st.name, vals[i])
			if err != nil {
				return nil // CONFIG SET refuses the value before any build
			}
			p[st.name] = v
		}
	}
	c, err := buildTLS(p)
	return &tlsBuild{params: p, conf: c, err: err}
}

// tlsConfigFor is the configuration of params: the one prepareTLS built
// for them if it did, else built now (cfgMu held; only a CONFIG SET
// inside MULTI/EXEC, which runs with the keyspace lock held, gets here
// without one prepared).
func (s *Server) tlsConfigFor(p tlsParams) (*tlsConfigs, error) {
	if b := s.tlsReady; b != nil && maps.Equal(b.params, p) {
		return b.conf, b.err
	}
	return buildTLS(p)
}

// applyTLS swaps in the configuration of the settings in force (cfgMu
// held); on error the one in use stays (the caller restores the
// settings).
func (s *Server) applyTLS() error {
	p := *s.tlsParams.Load()
	if !s.tlsInUse(p) {
		return nil
	}
	c, err := s.tlsConfigFor(p)
	if err != nil {
		s.log.Warn("TLS configuration refused; the one in use stays", "err", err)
		return err
	}
	s.tlsConf.Store(c)
	return nil
}

// ReloadTLS reads the TLS certificate, key and CA files again (same
// settings) and uses them for new connections; on error the configuration
// in use stays and the error is returned. bloom serve calls it on SIGHUP.
// The files are read with no lock held but tlsMu, which only other TLS
// changes wait for.
func (s *Server) ReloadTLS() error {
	s.tlsMu.Lock()
	defer s.tlsMu.Unlock()
	p := *s.tlsParams.Load()
	if !s.tlsInUse(p) {
		return errors.New("server: TLS is not in use (no tls-port, tls-replication no)")
	}
	c, err := buildTLS(p)
	if err != nil {
		s.log.Warn("TLS configuration refused; the one in use stays", "err", err)
		return fmt.Errorf("server: TLS reload: %w", err)
	}
	s.cfgMu.Lock()
	// Only a CONFIG SET inside MULTI changes the settings without tlsMu:
	// then its own configuration, built from them, stays.
	same := maps.Equal(p, *s.tlsParams.Load())
	if same {
		s.tlsConf.Store(c)
	}
	s.cfgMu.Unlock()
	if !same {
		return errors.New("server: TLS reload: the tls-* settings changed meanwhile; the configuration built from them is in use")
	}
	s.log.Info("TLS certificates reloaded", "cert", p["tls-cert-file"], "ca", strings.TrimSpace(p["tls-ca-cert-file"]+" "+p["tls-ca-cert-dir"]))
	return nil
}

// serverTLS is the listeners' configuration: each handshake takes the
// configuration in force when it starts.
func (s *Server) serverTLS() *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if c := s.tlsConf.Load(); c != nil {
			return c.server, nil
		}
		return nil, errors.New("TLS is not configured")
	}}
}
