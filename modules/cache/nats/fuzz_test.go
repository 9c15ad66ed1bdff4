package natslease

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/fxelection/fxelection/fxelection/config"
	cachelease "github.com/fxelection/fxelection/modules/cache"
)

// FuzzModuleSettings feeds arbitrary url, bucket and prefix values to the
// module through a document: decoding and Validate never panic, the URL (a
// secret) never appears in an error, and the module accepts exactly the
// buckets ValidBucket accepts and the prefixes New accepts.
func FuzzModuleSettings(f *testing.F) {
	f.Add("nats://h:4222", "fxelection", "fxelection.")
	f.Add("nats://u:secret-pw@h:1, nats://h:2", "", "")
	f.Add(" , ", "a.b", "a b")
	f.Add("nats://h:1 x", "a b", ".x")
	f.Add("tls://h:1", strings.Repeat("b", 201), "a..b")
	f.Fuzz(func(t *testing.T, url, bucket, prefix string) {
		settings, err := json.Marshal(map[string]string{"module": moduleID, "url": url, "bucket": bucket, "prefix": prefix})
		if err != nil {
			return
		}
		doc := `{"elections": [{"name": "e", "backend": ` + string(settings) + `}]}`
		_, docErr := config.Parse([]byte(doc))
		if errors.Is(docErr, config.ErrRequired) {
			return // url missing while decoding: Validate did not run
		}
		b, newErr := backendOn(&Store{}, cachelease.Options{KeyPrefix: prefix})
		if newErr == nil {
			_ = b.Close()
		}
		validBucket := bucket == "" || ValidBucket(bucket)
		switch {
		case docErr == nil && (newErr != nil || !validBucket):
			t.Fatalf("module accepts bucket %q prefix %q; ValidBucket %v, New: %v", bucket, prefix, validBucket, newErr)
		case newErr != nil && !errors.Is(docErr, cachelease.ErrInvalidPrefix):
			t.Fatalf("New refuses prefix %q (%v), the module says %v", prefix, newErr, docErr)
		case !validBucket && newErr == nil && !errors.Is(docErr, ErrBucketRequired):
			t.Fatalf("ValidBucket refuses %q, the module says %v", bucket, docErr)
		}
		// Long values only: a short one may be a word of the message.
		if docErr != nil && len(url) > 24 && strings.Contains(docErr.Error(), url) {
			t.Fatalf("error %q contains the URL %q", docErr, url)
		}
	})
}
