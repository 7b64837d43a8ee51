package cellrun

import "errors"

// ErrInput marks an error in what the user asked (a scenario that does not
// load, a bad shard, a resume of the wrong run): the command line exits 2
// for it.
var ErrInput = errors.New("bad input")

// inputError is an error in the input: it reads as err and is ErrInput.
type inputError struct{ err error }

func (e inputError) Error() string        { return e.err.Error() }
func (e inputError) Unwrap() error        { return e.err }
func (e inputError) Is(target error) bool { return target == ErrInput }

// inputErr marks err as an error in the input.
func InputErr(err error) error { return inputError{err} }
