//go:build unix

package badgerstore

// For the tests of package badgerstore_test, which reach the store through
// every way in, the doctor's among them (elsewhere_test.go).
var (
	Within         = within
	StoreWithSpool = storeWithSpool
)
