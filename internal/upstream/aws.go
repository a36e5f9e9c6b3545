package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Signer signs each request an upstream is sent (a cloud's request
// signature); safe for concurrent use.
type Signer interface {
	// Credentials are what Sign signs with, fetched and refreshed by the
	// signer (bounded by ctx); an error makes the call an upstream
	// failure, nothing sent.
	Credentials(ctx context.Context) (any, error)
	// Sign signs req, whose body is body, with credentials.
	Sign(req *http.Request, body []byte, credentials any) error
}

// AWSService is the service name Amazon Bedrock's requests are signed for.
const AWSService = "bedrock"

// AWSSigner signs requests with AWS Signature Version 4 for Amazon Bedrock
// in region ("" for the region the environment or the shared config
// names), with the credentials of the AWS SDK's default chain: the
// environment (AWS_ACCESS_KEY_ID, …), the shared config and credentials
// files and their profiles (SSO included), web identity (EKS IRSA), EKS
// Pod Identity and ECS task roles, and the EC2 instance role. They are
// found at the first call and kept, and refreshed shortly before they
// expire; credentials that cannot be found are looked for again at a
// later call, not before retryFind.
func AWSSigner(region string) Signer { return &awsSigner{region: region} }

type awsSigner struct {
	region string

	mu     sync.Mutex
	creds  aws.CredentialsProvider
	err    error
	failed time.Time
}

// awsCredentials are what an AWS signature is made with: the
// credentials and the region.
type awsCredentials struct {
	creds  aws.Credentials
	region string
}

func (s *awsSigner) Credentials(ctx context.Context) (any, error) {
	provider, region, err := s.provider(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	c, err := provider.Retrieve(ctx) // cached, and refreshed before it expires
	if err != nil {
		return nil, fmt.Errorf("aws credentials: %w", err)
	}
	return awsCredentials{creds: c, region: region}, nil
}

// provider loads the default chain once (again after retryFind when
// that failed).
func (s *awsSigner) provider(ctx context.Context) (aws.CredentialsProvider, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creds != nil {
		return s.creds, s.region, nil
	}
	if s.err != nil && time.Since(s.failed) < retryFind {
		return nil, "", s.err
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	opts := []func(*config.LoadOptions) error{}
	if s.region != "" {
		opts = append(opts, config.WithRegion(s.region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err == nil && cfg.Region == "" {
		err = fmt.Errorf("no region: set the upstream's region, or AWS_REGION")
	}
	if err != nil {
		s.err, s.failed = fmt.Errorf("aws credentials: %w", err), time.Now()
		return nil, "", s.err
	}
	s.creds, s.region, s.err = cfg.Credentials, cfg.Region, nil
	return s.creds, s.region, nil
}

func (s *awsSigner) Sign(req *http.Request, body []byte, credentials any) error {
	c := credentials.(awsCredentials)
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(req.Context(), c.creds, req, hex.EncodeToString(sum[:]), AWSService, c.region, time.Now())
}

// RegionOf is the region an AWS endpoint's host names
// (bedrock-runtime.us-east-1.amazonaws.com: us-east-1), "" for another
// host.
func RegionOf(host string) string {
	host, _, _ = strings.Cut(host, ":")
	parts := strings.Split(host, ".")
	if len(parts) >= 4 && strings.HasSuffix(host, ".amazonaws.com") {
		return parts[len(parts)-3]
	}
	return ""
}
