//go:build !amd64 || purego

package kernels

// No assembly pair emitters on this platform (or under the purego tag):
// emitterFor and maskEmitterFor use the generic ones.

func fastEmitter(lts, rts int) emitter { return nil }

func fastMaskEmitter(lts, rts int) maskEmitter { return nil }
