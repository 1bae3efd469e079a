// The handshake that opens every transport connection (actors/distributed/distributed.md,
// "Transport"). Fixed sizes only, so the server allocates and parses nothing
// larger than kHelloBytes before the peer has proven it holds the job's token:
//
//   client -> server  hello, kHelloBytes: "RILL", version, role, id, a 16-byte client nonce
//   server -> client  challenge, kNonceBytes: a random server nonce
//   client -> server  HMAC-SHA256(token, "client" | hello | challenge)
//   server -> client  HMAC-SHA256(token, "server" | hello | challenge)
//
// Each side closes at once when the other's MAC is wrong; the token never
// crosses the wire. Plain functions: safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rill {

constexpr size_t kHelloBytes = 32;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr uint16_t kTransportVersion = 1;

// kRank: a rank of a process group, at rank 0's rendezvous store.
enum class PeerRole : uint16_t { kTrainer = 1, kServer = 2, kTool = 3, kRank = 4 };

using HelloBytes = std::array<uint8_t, kHelloBytes>;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

struct Hello {
  PeerRole role = PeerRole::kTrainer;
  int32_t id = 0;  // the trainer id, the server index
  std::array<uint8_t, 16> nonce{};
};

HelloBytes EncodeHello(const Hello& hello);
// Throws rill::Error (kInvalidArgument) naming `peer` for a wrong magic, version,
// role or reserved field.
Hello DecodeHello(const HelloBytes& bytes, const std::string& peer);

// Fills `out` with bytes from OpenSSL's CSPRNG. Throws kInternal when it fails.
void FillRandom(uint8_t* out, size_t size);

enum class MacSide { kClient, kServer };

// HMAC-SHA256 keyed with `token` over the side's label, the hello and the challenge.
Mac HandshakeMac(const std::string& token, MacSide side, const HelloBytes& hello,
                 const Nonce& challenge);

// Compares in constant time.
bool SameMac(const Mac& a, const Mac& b);

}  // namespace rill
