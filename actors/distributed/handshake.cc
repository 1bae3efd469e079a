#include "actors/distributed/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <climits>
#include <cstring>

#include "rill/error.h"

namespace rill {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'I', 'L', 'L'};

}  // namespace

// Layout: magic[4], uint16 version, uint16 role, int32 id, uint32 reserved (0),
// nonce[16]; little-endian.
HelloBytes EncodeHello(const Hello& hello) {
  HelloBytes bytes{};
  std::memcpy(bytes.data(), kMagic, 4);
  bytes[4] = static_cast<uint8_t>(kTransportVersion);
  bytes[5] = static_cast<uint8_t>(kTransportVersion >> 8);
  const auto role = static_cast<uint16_t>(hello.role);
  bytes[6] = static_cast<uint8_t>(role);
  bytes[7] = static_cast<uint8_t>(role >> 8);
  const auto id = static_cast<uint32_t>(hello.id);
  for (int i = 0; i < 4; ++i) bytes[8 + i] = static_cast<uint8_t>(id >> (8 * i));
  std::memcpy(bytes.data() + 16, hello.nonce.data(), hello.nonce.size());
  return bytes;
}

Hello DecodeHello(const HelloBytes& bytes, const std::string& peer) {
  RILL_CHECK(std::memcmp(bytes.data(), kMagic, 4) == 0, kInvalidArgument, "connection from ", peer,
             " did not open with a Rill hello (wrong magic)");
  const int version = bytes[4] | (bytes[5] << 8);
  RILL_CHECK(version == kTransportVersion, kInvalidArgument, "hello from ", peer,
             " speaks transport version ", version, "; this build speaks ", kTransportVersion);
  const int role = bytes[6] | (bytes[7] << 8);
  RILL_CHECK(
      role >= static_cast<int>(PeerRole::kTrainer) && role <= static_cast<int>(PeerRole::kRank),
      kInvalidArgument, "hello from ", peer, " names unknown role ", role);
  uint32_t id = 0, reserved = 0;
  for (int i = 0; i < 4; ++i) {
    id |= static_cast<uint32_t>(bytes[8 + i]) << (8 * i);
    reserved |= static_cast<uint32_t>(bytes[12 + i]) << (8 * i);
  }
  RILL_CHECK(reserved == 0, kInvalidArgument, "hello from ", peer, " sets reserved bytes");
  Hello hello;
  hello.role = static_cast<PeerRole>(role);
  hello.id = static_cast<int32_t>(id);
  std::memcpy(hello.nonce.data(), bytes.data() + 16, hello.nonce.size());
  return hello;
}

void FillRandom(uint8_t* out, size_t size) {
  RILL_CHECK(size <= INT_MAX && RAND_bytes(out, static_cast<int>(size)) == 1, kInternal,
             "OpenSSL's RAND_bytes failed to give ", size, " random bytes");
}

Mac HandshakeMac(const std::string& token, MacSide side, const HelloBytes& hello,
                 const Nonce& challenge) {
  static constexpr char kClientLabel[] = "rill transport v1 client";
  static constexpr char kServerLabel[] = "rill transport v1 server";
  const char* label = side == MacSide::kClient ? kClientLabel : kServerLabel;
  uint8_t message[sizeof(kClientLabel) + kHelloBytes + kNonceBytes];
  static_assert(sizeof(kClientLabel) == sizeof(kServerLabel));
  std::memcpy(message, label, sizeof(kClientLabel));
  std::memcpy(message + sizeof(kClientLabel), hello.data(), kHelloBytes);
  std::memcpy(message + sizeof(kClientLabel) + kHelloBytes, challenge.data(), kNonceBytes);
  Mac mac{};
  unsigned int length = 0;
  const uint8_t* ok = HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()), message,
                           sizeof(message), mac.data(), &length);
  RILL_CHECK(ok != nullptr && length == kMacBytes, kInternal, "OpenSSL's HMAC-SHA256 failed");
  return mac;
}

bool SameMac(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), kMacBytes) == 0;
}

}  // namespace rill
