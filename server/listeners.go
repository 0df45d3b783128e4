package server

// Listeners: plain text on Addr and ExtraAddrs (Redis's port on every bind
// address), TLS on TLSAddr and TLSExtraAddrs (tls-port). CONFIG SET port
// and tls-port replace a kind of listener while the server runs, as Redis
// does, but opening the new ones first: if the port cannot be had, the
// error leaves the old ones listening (Redis closes them first). Clients
// already connected stay.

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Addr is the address the server listens on for plain-text clients
// (after Listen); with TLS only, the TLS listener's.
func (s *Server) Addr() string {
	if a, ok := s.addr.Load().(string); ok {
		if a == "" {
			return s.TLSAddr()
		}
		return a
	}
	if s.cfg.Addr == "" {
		return s.cfg.TLSAddr
	}
	return s.cfg.Addr
}

// TLSAddr is the address of the TLS listener ("" without one).
func (s *Server) TLSAddr() string {
	if a, ok := s.tlsAddr.Load().(string); ok {
		return a
	}
	return ""
}

// plainPort is CONFIG GET port: the plain-text listener's port, 0 for none.
func (s *Server) plainPort() string { return portOf(&s.addr, s.cfg.Addr) }

// tlsPort is CONFIG GET tls-port: the TLS listener's port, 0 for none.
func (s *Server) tlsPort() string { return portOf(&s.tlsAddr, s.cfg.TLSAddr) }

// portOf is the port of the address in v, or of configured before Listen
// stored one; "0" for none.
func portOf(v *atomic.Value, configured string) string {
	a, ok := v.Load().(string)
	if !ok {
		a = configured
	}
	if a == "" {
		return "0"
	}
	_, p := splitHostPort(a)
	return p
}

// tlsListening reports whether there is a TLS listener (or, before
// Listen, will be).
func (s *Server) tlsListening() bool {
	if a, ok := s.tlsAddr.Load().(string); ok {
		return a != ""
	}
	return s.cfg.TLSAddr != ""
}

// hostsOf lists the hosts of addresses ("-" kept before optional ones).
func hostsOf(first string, extra []string) []string {
	if first == "" {
		return nil
	}
	h, _ := splitHostPort(first)
	out := []string{h}
	for _, a := range extra {
		opt := ""
		if strings.HasPrefix(a, "-") {
			opt, a = "-", a[1:]
		}
		h, _ := splitHostPort(a)
		out = append(out, opt+h)
	}
	return out
}

// openListeners listens on addrs ("-" before one: skipped with a warning
// if it cannot be had), all or none.
func (s *Server) openListeners(addrs []string, useTLS bool) ([]net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: s.cfg.TCPKeepAlive}
	var out []net.Listener
	for i, a := range addrs {
		optional := i > 0 && strings.HasPrefix(a, "-")
		a = strings.TrimPrefix(a, "-")
		ln, err := lc.Listen(context.Background(), "tcp", a)
		if err != nil {
			if optional {
				s.log.Warn("optional bind address unavailable", "addr", a, "err", err)
				continue
			}
			for _, l := range out {
				l.Close()
			}
			return nil, fmt.Errorf("listen %s: %w", a, err)
		}
		if useTLS {
			ln = tls.NewListener(ln, s.serverTLS())
		}
		out = append(out, ln)
	}
	return out, nil
}

// firstAddr is the address of a kind's first listener ("" for none).
func firstAddr(lns []net.Listener) string {
	if len(lns) == 0 {
		return ""
	}
	return lns[0].Addr().String()
}

// Listen opens the listeners (Redis protocol on Addr and ExtraAddrs, TLS
// on TLSAddr and TLSExtraAddrs, metrics) without serving yet. The TLS
// files are read here.
func (s *Server) Listen() error {
	p := *s.tlsParams.Load()
	if s.tlsInUse(p) {
		c, err := buildTLS(p)
		if err != nil {
			return fmt.Errorf("server: TLS: %w", err)
		}
		s.tlsConf.Store(c)
	}
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	s.bindHosts = hostsOf(s.cfg.Addr, s.cfg.ExtraAddrs)
	if s.bindHosts == nil {
		s.bindHosts = hostsOf(s.cfg.TLSAddr, s.cfg.TLSExtraAddrs)
	}
	if s.cfg.Addr != "" {
		lns, err := s.openListeners(append([]string{s.cfg.Addr}, s.cfg.ExtraAddrs...), false)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.plainLns = lns
	}
	if s.cfg.TLSAddr != "" {
		lns, err := s.openListeners(append([]string{s.cfg.TLSAddr}, s.cfg.TLSExtraAddrs...), true)
		if err != nil {
			for _, l := range s.plainLns {
				l.Close()
			}
			s.plainLns = nil
			return fmt.Errorf("server: %w", err)
		}
		s.tlsLns = lns
	}
	if s.cfg.UnixSocket != "" {
		l, err := listenUnix(s.cfg.UnixSocket, s.cfg.UnixSocketPerm)
		if err != nil {
			for _, l := range s.allListeners() {
				l.Close()
			}
			s.plainLns, s.tlsLns = nil, nil
			return fmt.Errorf("server: %w", err)
		}
		s.unixLns = []net.Listener{l}
	}
	s.addr.Store(firstAddr(s.plainLns))
	s.tlsAddr.Store(firstAddr(s.tlsLns))
	if s.cfg.MetricsAddr != "" {
		if err := s.listenMetrics(); err != nil {
			for _, l := range s.allListeners() {
				l.Close()
			}
			s.plainLns, s.tlsLns, s.unixLns = nil, nil, nil
			return err
		}
	}
	return nil
}

// listenUnix listens on a Unix socket at path, as Redis's unixsocket: a
// socket left there by an earlier run is removed first (anything else at
// the path is an error, never removed), and perm, when not 0, is set on
// the new one.
func listenUnix(path string, perm os.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("unixsocket %s: the path exists and is not a socket", path)
		}
		os.Remove(path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unixsocket: %w", err)
	}
	if perm != 0 {
		if err := os.Chmod(path, perm); err != nil {
			l.Close()
			return nil, fmt.Errorf("unixsocketperm: %w", err)
		}
	}
	return l, nil
}

// allListeners are the plain-text listeners, the TLS ones, then the Unix
// socket (lnMu held).
func (s *Server) allListeners() []net.Listener {
	return append(append(append([]net.Listener{}, s.plainLns...), s.tlsLns...), s.unixLns...)
}

// listening reports whether Listen opened a listener.
func (s *Server) listening() bool {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return len(s.plainLns)+len(s.tlsLns)+len(s.unixLns) > 0
}

// ListenAddrs are the addresses the server listens on for clients
// (plain-text ones first, then TLS ones).
func (s *Server) ListenAddrs() []string {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	var out []string
	for _, l := range s.allListeners() {
		out = append(out, l.Addr().String())
	}
	return out
}

// startAccepting starts an accept loop for every listener (Serve).
func (s *Server) startAccepting() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	s.serving = true
	for _, l := range s.allListeners() {
		s.accept(l)
	}
}

// accept runs an accept loop for l until l closes (lnMu held). A failure
// other than closing ends Serve.
func (s *Server) accept(l net.Listener) {
	s.acceptWG.Add(1)
	go func() {
		defer s.acceptWG.Done()
		if err := s.acceptLoop(l); err != nil {
			select {
			case s.acceptErr <- err:
			default:
			}
		}
	}()
}

// setListenPort is CONFIG SET port (useTLS false) or tls-port: the
// kind's listeners move to port on every bind address (0: none). The new
// ones are opened before the old ones close; on error nothing changes.
func (s *Server) setListenPort(v string, useTLS bool) error {
	n, err := configInt(v, 0, 65535)
	if err != nil {
		return err
	}
	port := strconv.FormatInt(n, 10)
	cur := s.plainPort()
	if useTLS {
		cur = s.tlsPort()
	}
	if port == cur {
		return nil // unchanged: nothing to do (as Redis, which applies only changes)
	}
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closed.Load() {
		return errConfigValue("the server is shutting down")
	}
	old, other := &s.plainLns, s.tlsLns
	if useTLS {
		old, other = &s.tlsLns, s.plainLns
	}
	var lns []net.Listener
	if port != "0" {
		if useTLS && s.tlsConf.Load() == nil {
			// The first TLS listener: CONFIG SET built the configuration
			// before taking any lock.
			c, err := s.tlsConfigFor(*s.tlsParams.Load())
			if err != nil {
				return errConfigValue("Unable to update TLS configuration: " + err.Error())
			}
			s.tlsConf.Store(c)
		}
		addrs := make([]string, len(s.bindHosts))
		for i, h := range s.bindHosts {
			opt := ""
			if strings.HasPrefix(h, "-") {
				opt, h = "-", h[1:]
			}
			addrs[i] = opt + net.JoinHostPort(h, port)
		}
		if lns, err = s.openListeners(addrs, useTLS); err != nil {
			return errConfigValue("Unable to listen on this port: " + err.Error())
		}
	} else if len(other) == 0 {
		return errConfigValue("the server would not listen anywhere (port and tls-port both 0)")
	}
	for _, l := range *old {
		l.Close() // its accept loop ends; clients already connected stay
	}
	*old = lns
	if s.serving {
		for _, l := range lns {
			s.accept(l)
		}
	}
	if useTLS {
		s.tlsAddr.Store(firstAddr(lns))
	} else {
		s.addr.Store(firstAddr(lns))
	}
	s.log.Info("listening", "port", port, "tls", useTLS, "addrs", strings.Join(addrsOf(lns), " "))
	return nil
}

func addrsOf(lns []net.Listener) []string {
	var out []string
	for _, l := range lns {
		out = append(out, l.Addr().String())
	}
	return out
}

// listenMetrics opens the metrics listener (/metrics, probes).
func (s *Server) listenMetrics() error {
	hl, err := net.Listen("tcp", s.cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("server: metrics listen %s: %w", s.cfg.MetricsAddr, err)
	}
	s.httpLn = &limitListener{Listener: hl, max: metricsMaxConns}
	idle := s.cfg.metricsIdle
	if idle <= 0 {
		idle = metricsIdleTimeout
	}
	s.httpSrv = &http.Server{
		Handler: s.metrics.handler(s),
		// A client that connects and says nothing, sends slowly, reads
		// slowly or keeps an idle keep-alive connection open is dropped:
		// it must not hold a descriptor for ever.
		ReadHeaderTimeout: min(10*time.Second, idle),
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       idle,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return nil
}
