package sim

import "reflect"

func equalResults(a, b *Results) bool { return reflect.DeepEqual(a, b) }
