package audit

// SetDrop makes p lose the monitoring events f returns true for, as a
// network would: never sent, yet taken for acknowledged.
func SetDrop(p *Publisher, f func(*Event) bool) {
	p.sendMu.Lock() // send reads drop with sendMu held
	p.drop = f
	p.sendMu.Unlock()
}
