package mcpedge

import "testing"

func TestSessionIDs(t *testing.T) {
	t.Parallel()
	s := NewSessions(nil)
	seen := map[string]bool{}
	for range 1000 {
		id := s.Generate()
		if len(id) != 43 || seen[id] {
			t.Fatalf("session id %q: want 43 base64url chars (256 bits), unique", id)
		}
		seen[id] = true
	}
	id := s.Generate()
	if term, err := s.Validate(id); term || err != nil {
		t.Fatalf("fresh id: terminated=%v err=%v", term, err)
	}
	if s.ownedBy(id, "alice") {
		t.Fatal("an unbound session belongs to nobody")
	}
	s.bind(id, "alice")
	s.bind(id, "mallory") // a second bind never steals a session
	if !s.ownedBy(id, "alice") || s.ownedBy(id, "mallory") {
		t.Fatal("binding is wrong")
	}
	if _, err := s.Validate("made-up"); err == nil {
		t.Fatal("an unknown id validated")
	}
	ended := ""
	s.onEnd = func(id, reason string) { ended = id + " " + reason }
	s.Terminate(id)
	if term, _ := s.Validate(id); !term || ended != id+" client DELETE" || s.ownedBy(id, "alice") {
		t.Fatalf("after Terminate: terminated=%v ended=%q", term, ended)
	}
}
