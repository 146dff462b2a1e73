package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of the API (openapi.yaml), served
// at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(OpenAPI)
}
