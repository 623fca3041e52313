//go:build !linux

package rt

import "errors"

func newTimerfdAlarm(signal func()) (*timeAlarm, error) {
	return nil, errors.New("rt: no timerfd on this system")
}
