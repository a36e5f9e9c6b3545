package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Amazon Bedrock's OpenAI-compatible chat completions
// (docs.aws.amazon.com/bedrock/latest/userguide/inference-chat-completions.html):
// POST /openai/v1/chat/completions on a bedrock-runtime endpoint, the
// chat completions wire, every request signed with AWS Signature Version
// 4 for the service bedrock (or a Bedrock API key as the bearer). The
// simulator checks the signature against AWSAccessKey and AWSSecretKey:
// it signs the request it received, as it received it, again, and
// compares. A request that is not signed so is AWS's 403, as Bedrock
// answers one.

// The credentials the simulated Bedrock takes.
const (
	AWSAccessKey = "AKIASIMULATOR0000001"
	AWSSecretKey = "sim-secret-access-key"
)

// bedrockSigned reports a request that carries an AWS signature.
func bedrockSigned(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
}

// bedrockOpenAI serves Bedrock's chat completions with next, the
// signature checked.
func (s *Sim) bedrockOpenAI(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "The body could not be read.")
		return
	}
	if msg := s.verifySigV4(r, body); msg != "" {
		b, _ := json.Marshal(map[string]string{"message": msg})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-amzn-ErrorType", "InvalidSignatureException")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write(b)
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	next(w, r)
}

// verifySigV4 checks r's AWS Signature Version 4 against the simulator's
// credentials, and its session token, when it has one, against those the
// credentials endpoint issued: "" when it holds, else what AWS says.
func (s *Sim) verifySigV4(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	var cred, signed string
	for _, f := range strings.Split(strings.TrimPrefix(auth, "AWS4-HMAC-SHA256 "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		}
	}
	scope := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[0] != AWSAccessKey || scope[3] != "bedrock" {
		return "The security token included in the request is invalid."
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || time.Since(at).Abs() > 5*time.Minute {
		return "Signature expired or not yet current."
	}
	if token := r.Header.Get("X-Amz-Security-Token"); token != "" {
		s.mu.Lock()
		until, ok := s.tokens[token]
		s.mu.Unlock()
		if !ok || time.Now().After(until) {
			return "The security token included in the request is expired"
		}
	}
	// The request as it was signed: its signed headers alone.
	again, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	again.ContentLength = int64(len(body))
	for h := range strings.SplitSeq(signed, ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: AWSAccessKey, SecretAccessKey: AWSSecretKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, hex.EncodeToString(sum[:]), "bedrock", scope[2], at); err != nil || again.Header.Get("Authorization") != auth {
		return "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return ""
}

// awsCredentials is a container credentials endpoint, as ECS task roles
// and EKS Pod Identity serve one (AWS_CONTAINER_CREDENTIALS_FULL_URI):
// temporary credentials whose session token is valid for
// Options.TokenTTL.
func (s *Sim) awsCredentials(w http.ResponseWriter, r *http.Request) {
	token, ttl := s.issue("sim-aws-session-")
	b, _ := json.Marshal(map[string]string{"AccessKeyId": AWSAccessKey, "SecretAccessKey": AWSSecretKey, "Token": token,
		"Expiration": time.Now().Add(ttl).UTC().Format(time.RFC3339)})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
