package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/sandgate/sandgate/runner/protocol"
)

// openTimeout bounds reading the runner's EgressOpen.
const openTimeout = 10 * time.Second

// handle serves one proxied connection from request to record.
func (s *Service) handle(ctx context.Context, st *yamux.Stream, g *Gate) {
	stream := halfCloser{st}
	defer stream.Close()
	if !g.rate.take(1) {
		// Over the rate: refused at once, counted, not recorded alone.
		g.unrecorded.Add(1)
		_ = stream.SetDeadline(time.Now().Add(openTimeout))
		_ = protocol.WriteEgressFrame(stream, protocol.EgressVerdict{Status: http.StatusTooManyRequests,
			Reason: fmt.Sprintf("sandgate egress refused: this sandbox opens more than %d connections a minute; slow down", g.limits.ConnsPerMinute)})
		return
	}
	rec := Record{SandboxID: g.SandboxID, Tenant: g.Tenant, Principal: g.Principal, Start: time.Now()}
	defer func() {
		rec.Duration = time.Since(rec.Start)
		rec.Unrecorded = g.unrecorded.Swap(0)
		s.opts.Record(rec)
	}()
	var open protocol.EgressOpen
	_ = stream.SetDeadline(time.Now().Add(openTimeout))
	if err := protocol.ReadEgressFrame(stream, &open); err != nil {
		rec.Status, rec.Refused = http.StatusBadRequest, "malformed request from the runner: "+err.Error()
		return
	}
	rec.Kind, rec.Port = open.Kind, open.Port
	rec.Asked = net.JoinHostPort(open.Host, strconv.Itoa(int(open.Port)))
	leave, err := g.enter()
	if err != nil {
		s.verdict(stream, &rec, refuse(http.StatusTooManyRequests, rec.Asked, "%v", err))
		return
	}
	defer leave()
	t, ref := s.decide(g, open)
	if ref != nil {
		s.verdict(stream, &rec, ref)
		return
	}
	rec.Host = t.host.Name
	dest, ip, rule, ref := s.dial(ctx, t, g.limits.DialTimeout)
	if ref != nil {
		s.verdict(stream, &rec, ref)
		return
	}
	defer dest.Close()
	rec.IP, rec.Rule = ip.String(), rule
	if !s.verdict(stream, &rec, nil) {
		return
	}
	_ = stream.SetDeadline(time.Time{})
	m := &meter{gate: g}
	defer func() {
		rec.BytesUp, rec.BytesDown = m.up.Load(), m.down.Load()
		if err := m.cutReason(); err != nil && rec.Closed == "" {
			rec.Closed = err.Error()
		}
	}()
	s.relay(stream, dest, t, m, &rec)
}

// relay checks what must be checked in the first bytes and pipes the rest.
func (s *Service) relay(stream, dest net.Conn, t target, m *meter, rec *Record) {
	idle := m.gate.limits.IdleTimeout
	switch {
	case t.kind == "http":
		if err := forwardHTTP(stream, dest, t, m, idle); err != nil && rec.Closed == "" {
			rec.Closed = err.Error()
		}
		return
	case t.port == 443:
		// No domain fronting: the name the TLS client asks the server
		// for must be the one the policy allowed.
		sni, hello, err := readSNI(stream)
		rec.SNI = sni
		if err != nil {
			rec.Status, rec.Refused = http.StatusForbidden, fmt.Sprintf("port 443 carries TLS only, and the client sent no TLS ClientHello (%v)", err)
			return
		}
		if !sniMatches(sni, t.host) {
			_, _ = stream.Write(tlsAccessDenied)
			rec.Status, rec.Refused = http.StatusForbidden, fmt.Sprintf("the TLS server name %q differs from the host asked for, %s (no domain fronting)", sni, t.host.Name)
			return
		}
		if !m.gate.budget.take(len(hello)) {
			rec.Closed = errBudget.Error()
			return
		}
		m.up.Add(int64(len(hello)))
		if _, err := dest.Write(hello); err != nil {
			rec.Closed = "send the TLS ClientHello: " + connectReason(err)
			return
		}
	}
	pipe(stream, dest, m, idle, true)
}

// verdict sends the runner the answer and fills rec; it reports whether
// the connection may go on.
func (s *Service) verdict(stream net.Conn, rec *Record, ref *refusal) bool {
	v := protocol.EgressVerdict{Status: http.StatusOK}
	if ref != nil {
		v = protocol.EgressVerdict{Status: ref.status, Reason: ref.reason}
		rec.Refused = ref.reason
	}
	rec.Status = v.Status
	if err := protocol.WriteEgressFrame(stream, v); err != nil {
		if ref == nil {
			rec.Closed = "the runner went away before the verdict: " + err.Error()
		}
		return false
	}
	return ref == nil
}

// halfCloser gives a yamux stream the CloseWrite pipe looks for: yamux's
// Close sends FIN and the stream stays readable until the other side's.
type halfCloser struct{ *yamux.Stream }

func (h halfCloser) CloseWrite() error { return h.Stream.Close() }
