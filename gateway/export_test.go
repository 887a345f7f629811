package gateway

// DropConnections closes every runner connection (and with them the
// egress sessions) and stops the background work (sweeps, the warm pool's
// refill) without touching the sandboxes, as the death of the gateway's
// process would. Tests that simulate a crash use it.
func (g *Server) DropConnections() {
	g.stop()
	for _, b := range g.boxes.matching(func(*box) bool { return true }) {
		b.mu.Lock()
		b.dropClient()
		b.mu.Unlock()
	}
}
