package warehouse

// Abandon stops renewing without releasing: what a killed holder leaves.
func (l *Lock) Abandon() {
	close(l.stop)
	<-l.done
}
