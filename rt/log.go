package rt

// Logger is injected as in wireguard-go's device.Logger: two function
// fields, either of which may be nil to discard. The driver logs routine
// start and stop and transport failures; per-frame events are counters,
// never log lines.
type Logger struct {
	Verbosef func(format string, args ...any)
	Errorf   func(format string, args ...any)
}

func (l *Logger) verbosef(format string, args ...any) {
	if l != nil && l.Verbosef != nil {
		l.Verbosef(format, args...)
	}
}

func (l *Logger) errorf(format string, args ...any) {
	if l != nil && l.Errorf != nil {
		l.Errorf(format, args...)
	}
}
