// Blobs (compression, dedup, corruption detection, limits) and API keys of
// the SQLite store, against a real database file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "store/blob_codec.h"
#include "store/store_test_util.h"

namespace assay {
namespace {

class BlobAndKeyTest : public StoreTestBase {};

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

std::string Compressible(size_t n) {
  std::string s;
  s.reserve(n);
  while (s.size() < n) s += fmt::format("row {} of a very regular table; ", s.size() % 97);
  s.resize(n);
  return s;
}

TEST_F(BlobAndKeyTest, BlobsRoundTripWhateverTheirCodec) {
  RawDb raw(path_);
  std::string text = Compressible(100'000);
  std::string noise = RandomBytes(50'000, 1);
  for (const std::string* data : {&text, &noise}) {
    Result<std::string> h = store_->PutBlob(*data);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(*h, Sha256Hex(*data));
    Result<std::string> back = store_->GetBlob(*h);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(*back == *data);
    EXPECT_TRUE(*store_->HasBlob(*h));
  }
  EXPECT_EQ(raw.Int(fmt::format("SELECT codec = 'zstd' FROM blobs WHERE hash = '{}'", Sha256Hex(text))), 1);
  EXPECT_EQ(raw.Int(fmt::format("SELECT codec = 'raw' FROM blobs WHERE hash = '{}'", Sha256Hex(noise))), 1);
  Result<std::string> empty = store_->PutBlob("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*store_->GetBlob(*empty), "");
}

TEST_F(BlobAndKeyTest, SameBytesAreStoredOnce) {
  std::string data = Compressible(1 << 20);
  Result<std::string> a = store_->PutBlob(data);
  Result<std::string> b = store_->PutBlob(data);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  ASSERT_TRUE(store_->PutBlob("other").ok());
  Result<StoreStats> st = store_->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->blobs, 2);
  EXPECT_EQ(st->blob_bytes_raw, (1 << 20) + 5);
  EXPECT_LT(st->blob_bytes_stored, st->blob_bytes_raw / 10);  // zstd did its job
}

TEST_F(BlobAndKeyTest, CorruptedBlobIsAnInfraError) {
  std::string noise = RandomBytes(4096, 2);  // stored raw
  std::string text = Compressible(4096);     // stored zstd
  std::string h_raw = *store_->PutBlob(noise);
  std::string h_zstd = *store_->PutBlob(text);
  RawDb raw(path_);
  // Flip one byte of the raw blob: same size, wrong content.
  raw.Exec(fmt::format(
      "UPDATE blobs SET data = substr(data, 1, 99) || x'{:02x}' || substr(data, 101) WHERE hash = '{}'",
      static_cast<unsigned char>(noise[99]) ^ 0xff, h_raw));
  // Replace the zstd frame with garbage.
  raw.Exec(fmt::format("UPDATE blobs SET data = randomblob(200) WHERE hash = '{}'", h_zstd));
  Result<std::string> a = store_->GetBlob(h_raw);
  EXPECT_EQ(a.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(a.status().message().find("corrupt"), std::string::npos) << a.status().message();
  Result<std::string> b = store_->GetBlob(h_zstd);
  EXPECT_EQ(b.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(b.status().message().find("corrupt"), std::string::npos) << b.status().message();
}

TEST_F(BlobAndKeyTest, ValidZstdOfOtherBytesFailsTheHashCheck) {
  Result<EncodedBlob> enc = EncodeBlob(Compressible(3000));
  ASSERT_TRUE(enc.ok());
  ASSERT_EQ(enc->codec, BlobCodec::kZstd);
  Result<std::string> r = DecodeBlob("zstd", enc->data, 3000, Sha256Hex("something else"));
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfraError);
  EXPECT_NE(r.status().message().find("hash mismatch"), std::string::npos);
  EXPECT_TRUE(DecodeBlob("zstd", enc->data, 3000, Sha256Hex(Compressible(3000))).ok());
}

TEST_F(BlobAndKeyTest, MalformedHashIsRejectedAndUnknownIsNotFound) {
  const std::string upper(64, 'A');
  for (const std::string& bad : {std::string("abc"), upper, std::string(63, 'a'), std::string(64, 'g'),
                                 std::string(65, 'a'), std::string("../../etc/passwd")}) {
    EXPECT_EQ(store_->GetBlob(bad).status().error_class(), ErrorClass::kRejected) << bad;
    EXPECT_EQ(store_->HasBlob(bad).status().error_class(), ErrorClass::kRejected) << bad;
  }
  std::string unknown = Sha256Hex("never stored");
  EXPECT_EQ(store_->GetBlob(unknown).status().error_class(), ErrorClass::kNotFound);
  Result<bool> has = store_->HasBlob(unknown);
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);
}

TEST_F(BlobAndKeyTest, BigBlobRoundTrips) {
  // 48 MiB: half noise, half text, so both paths of the codec see real volume.
  std::string big = RandomBytes(24 << 20, 3) + Compressible(24 << 20);
  Result<std::string> h = store_->PutBlob(big);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  Result<std::string> back = store_->GetBlob(*h);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->size(), big.size());
  EXPECT_TRUE(*back == big);
}

TEST_F(BlobAndKeyTest, BlobAboveTheLimitIsRejected) {
  SqliteOptions small;
  small.max_blob_bytes = 1 << 20;
  Reopen(small);
  EXPECT_TRUE(store_->PutBlob(std::string(1 << 20, 'x')).ok());
  Result<std::string> r = store_->PutBlob(std::string((1 << 20) + 1, 'y'));
  EXPECT_EQ(r.status().error_class(), ErrorClass::kRejected);
  EXPECT_EQ(store_->Stats()->blobs, 1);
}

TEST_F(BlobAndKeyTest, KeysAuthenticateUntilRevoked) {
  Result<CreatedKey> k = store_->CreateKey("ci pipeline");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->secret.size(), 6u + 48u);
  EXPECT_EQ(k->secret.rfind("assay_", 0), 0u);
  EXPECT_EQ(k->secret.find_first_not_of("0123456789abcdef", 6), std::string::npos);
  EXPECT_EQ(k->info.id.rfind("k_", 0), 0u);

  Result<std::string> who = store_->Authenticate(k->secret);
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(*who, k->info.id);
  EXPECT_EQ(store_->Authenticate(k->secret + "0").status().error_class(), ErrorClass::kUnauthorized);
  EXPECT_EQ(store_->Authenticate("").status().error_class(), ErrorClass::kUnauthorized);

  Result<CreatedKey> other = store_->CreateKey("human");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->secret, k->secret);
  Result<std::vector<ApiKeyInfo>> keys = store_->ListKeys();
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 2u);

  ASSERT_TRUE(store_->RevokeKey(k->info.id).ok());
  Result<std::string> denied = store_->Authenticate(k->secret);
  EXPECT_EQ(denied.status().error_class(), ErrorClass::kUnauthorized);
  EXPECT_NE(denied.status().message().find("revoked"), std::string::npos);
  EXPECT_TRUE(store_->Authenticate(other->secret).ok());
  EXPECT_TRUE(store_->RevokeKey(k->info.id).ok());  // idempotent
  EXPECT_EQ(store_->RevokeKey("k_nope").error_class(), ErrorClass::kNotFound);
  Result<std::vector<ApiKeyInfo>> after = store_->ListKeys();
  ASSERT_TRUE(after.ok());
  for (const ApiKeyInfo& info : *after) {
    EXPECT_EQ(info.revoked, info.id == k->info.id) << info.name;
  }
}

TEST_F(BlobAndKeyTest, OnlyTheHashOfASecretIsStored) {
  Result<CreatedKey> k = store_->CreateKey("x");
  ASSERT_TRUE(k.ok());
  RawDb raw(path_);
  EXPECT_EQ(raw.Int(fmt::format("SELECT count(*) FROM api_keys WHERE secret_sha256 = '{}'",
                                Sha256Hex(k->secret))), 1);
  // The secret's random part appears in no column of any row.
  std::string tail = k->secret.substr(6);
  EXPECT_EQ(raw.Int(fmt::format("SELECT count(*) FROM api_keys WHERE instr(id || name || secret_sha256, '{}')",
                                tail)), 0);
}

}  // namespace
}  // namespace assay
