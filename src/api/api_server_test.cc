// Starts the real ApiServer on 127.0.0.1 (ephemeral port) over an in-memory
// JobService and talks to it with a real HTTP client. The service is a
// stand-in for the scheduler: tests drive job states by hand to exercise SSE.
#include "api/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api_test_util.h"

namespace assay::api_test {
namespace {

TEST_F(ApiServerTest, SubmitGetAndCancel) {
  Start();
  std::string id = SubmitOk();
  ASSERT_EQ(id.rfind("j_", 0), 0u);
  auto get = Client().Get(("/v1/jobs/" + id).c_str());
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(Body(get)["state"], "queued");
  EXPECT_EQ(Body(get)["key_id"], "k_test");

  auto cancel = Client().Post(("/v1/jobs/" + id + "/cancel").c_str());
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 200);
  EXPECT_EQ(Body(cancel)["state"], "cancelled");
  // Cancelling an ended job is a rejected request, not a crash.
  auto again = Client().Post(("/v1/jobs/" + id + "/cancel").c_str());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 400);
  EXPECT_EQ(Body(again)["error"]["class"], "rejected");
}

TEST_F(ApiServerTest, ListPagesNewestFirstWithCursor) {
  Start();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(SubmitOk());
  auto page1 = Client().Get("/v1/jobs?limit=2");
  ASSERT_TRUE(page1);
  ASSERT_EQ(page1->status, 200);
  json p1 = Body(page1);
  ASSERT_EQ(p1["jobs"].size(), 2u);
  EXPECT_EQ(p1["jobs"][0]["id"], ids[4]);
  EXPECT_EQ(p1["jobs"][1]["id"], ids[3]);
  ASSERT_TRUE(p1["next"].is_string());
  auto page2 = Client().Get(("/v1/jobs?limit=2&before=" + p1["next"].get<std::string>()).c_str());
  json p2 = Body(page2);
  EXPECT_EQ(p2["jobs"][0]["id"], ids[2]);
  auto last = Client().Get(("/v1/jobs?limit=10&before=" + ids[1]).c_str());
  EXPECT_EQ(Body(last)["jobs"].size(), 1u);
  EXPECT_TRUE(Body(last)["next"].is_null());

  ASSERT_TRUE(service_.Transition(ids[0], JobState::kRunning, "").ok());
  auto running = Client().Get("/v1/jobs?state=running");
  ASSERT_EQ(Body(running)["jobs"].size(), 1u);
  EXPECT_EQ(Body(running)["jobs"][0]["id"], ids[0]);
  auto bad = Client().Get("/v1/jobs?state=sleeping");
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Body(bad)["error"]["field"], "state");
  EXPECT_EQ(Client().Get("/v1/jobs?limit=0")->status, 400);
}

TEST_F(ApiServerTest, UnknownJobAndRouteAreJson404) {
  Start();
  auto res = Client().Get("/v1/jobs/j_000000000000000000000000");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(Body(res)["error"]["class"], "not_found");
  auto route = Client().Get("/v1/nothing-here");
  ASSERT_TRUE(route);
  EXPECT_EQ(route->status, 404);
  EXPECT_EQ(Body(route)["error"]["class"], "not_found");
}

TEST_F(ApiServerTest, AuthRequiresAValidKeyExceptForHealth) {
  Start();
  auto none = Client(false).Get("/v1/jobs");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(Body(none)["error"]["class"], "unauthorized");

  auto bad = Client(false);
  bad.set_bearer_token_auth("assay_wrong");
  EXPECT_EQ(bad.Get("/v1/jobs")->status, 401);
  // A rejected upload does not get its body read, nor the job stored.
  EXPECT_EQ(bad.Post("/v1/jobs", R"({"kind":"cuda"})", "application/json")->status, 401);
  EXPECT_EQ(Body(Client().Get("/v1/jobs"))["jobs"].size(), 0u);

  EXPECT_EQ(Client().Get("/v1/jobs")->status, 200);
  auto header_key = Client(false);
  EXPECT_EQ(header_key.Get("/v1/jobs", {{"X-API-Key", kGoodKey}})->status, 200);
  EXPECT_EQ(Client(false).Get("/health")->status, 200);
  EXPECT_EQ(Client(false).Get("/metrics")->status, 200);
}

TEST_F(ApiServerTest, NoAuthIsRefusedOnAPublicHost) {
  ApiOptions o;
  o.host = "0.0.0.0";
  o.port = 0;
  o.no_auth = true;
  ApiServer server(service_, o);
  auto bound = server.Bind();
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().error_class(), ErrorClass::kRejected);
  EXPECT_TRUE(IsLoopbackHost("127.0.0.5"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::"));
}

TEST_F(ApiServerTest, NoAuthOnLoopbackAcceptsRequestsWithoutKey) {
  ApiOptions o;
  o.no_auth = true;
  Start(o);
  auto res = Client(false).Post("/v1/jobs", R"({"kind":"cuda"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 201);
  EXPECT_EQ(Body(res)["key_id"], "");
}

TEST_F(ApiServerTest, OversizedBodyGets413AndServerKeepsServing) {
  ApiOptions o;
  o.max_request_bytes = 1024;
  Start(o);
  // A raw request announcing a huge body: the server must answer without reading it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string req = std::string("POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") + kGoodKey +
                    "\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) {
    reply.append(buf, static_cast<size_t>(n));
    if (reply.find("}}") != std::string::npos) break;
  }
  close(fd);
  // The body was never read, so the client is told to drop the connection.
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  EXPECT_NE(reply.find("413"), std::string::npos) << reply;
  EXPECT_NE(reply.find("\"rejected\""), std::string::npos) << reply;

  // Through a normal client too; the server may close before the body is sent.
  auto big = Client().Post("/v1/jobs", std::string(4096, ' '), "application/json");
  if (big) {
    EXPECT_EQ(big->status, 413);
  }
  auto health = Client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(ApiServerTest, MalformedJsonIs400WithPosition) {
  Start();
  auto res = Client().Post("/v1/jobs", R"({"kind": "cuda",)", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(Body(res)["error"]["class"], "rejected");
  EXPECT_NE(Body(res)["error"]["message"].get<std::string>().find("at byte 17"), std::string::npos)
      << res->body;
  auto field = Client().Post("/v1/jobs", R"({"kind": "bad"})", "application/json");
  EXPECT_EQ(field->status, 400);
  EXPECT_EQ(Body(field)["error"]["field"], "kind");
  auto type = Client().Post("/v1/jobs", R"({"kind": "cuda"})", "text/plain");
  EXPECT_EQ(type->status, 415);
}

TEST_F(ApiServerTest, EventsArriveInOrderAndStreamEndsAtTerminalState) {
  Start();
  std::string id = SubmitOk();
  Stream s;
  OpenStream(s, id);
  while (!s.started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(service_.Transition(id, JobState::kCompiling, "compiling").ok());
  ASSERT_TRUE(service_.Transition(id, JobState::kRunning, "on gpu 0").ok());
  ASSERT_TRUE(service_.Transition(id, JobState::kDone, "", R"({"schema_version":1})").ok());
  s.thread.join();
  EXPECT_EQ(s.status, 200);
  auto frames = ParseSse(s.Text());
  ASSERT_EQ(frames.size(), 5u) << s.Text();
  const char* states[] = {"queued", "compiling", "running", "done"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(frames[i].event, "state");
    EXPECT_EQ(frames[i].id, i + 1);
    EXPECT_EQ(frames[i].data["seq"], i + 1);
    EXPECT_EQ(frames[i].data["state"], states[i]);
  }
  EXPECT_EQ(frames[2].data["message"], "on gpu 0");
  EXPECT_EQ(frames[4].event, "end");
  EXPECT_EQ(frames[4].data["state"], "done");
  EXPECT_EQ(frames[4].data["result"]["schema_version"], 1);
}

TEST_F(ApiServerTest, LastEventIdResumesAfterThatEvent) {
  Start();
  std::string id = SubmitOk();
  ASSERT_TRUE(service_.Transition(id, JobState::kRunning, "").ok());
  ASSERT_TRUE(service_.Transition(id, JobState::kFailed, "boom").ok());
  Stream s;
  OpenStream(s, id, {{"Last-Event-ID", "1"}});
  s.thread.join();
  auto frames = ParseSse(s.Text());
  ASSERT_EQ(frames.size(), 3u) << s.Text();
  EXPECT_EQ(frames[0].id, 2);
  EXPECT_EQ(frames[1].data["state"], "failed");
  EXPECT_EQ(frames[2].event, "end");

  // Resuming after the terminal event ends at once instead of hanging.
  Stream after;
  OpenStream(after, id, {{"Last-Event-ID", "3"}});
  after.thread.join();
  auto tail = ParseSse(after.Text());
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].event, "end");
}

TEST_F(ApiServerTest, KeepaliveCommentsFlowWhileIdle) {
  ApiOptions o;
  o.sse_keepalive_ms = 100;
  Start(o);
  std::string id = SubmitOk();
  Stream s;
  OpenStream(s, id);
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  ASSERT_TRUE(service_.Transition(id, JobState::kCancelled, "").ok());
  s.thread.join();
  EXPECT_NE(s.Text().find(": keepalive\n\n"), std::string::npos);
  EXPECT_EQ(ParseSse(s.Text()).back().event, "end");
}

TEST_F(ApiServerTest, ManyOpenStreamsDoNotStarveOtherRequests) {
  ApiOptions o;
  o.max_sse_streams = 48;
  o.threads = 64;
  Start(o);
  constexpr int kStreams = 40;
  std::vector<std::string> ids;
  for (int i = 0; i < kStreams; ++i) ids.push_back(SubmitOk());
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<Stream>());
    OpenStream(*streams.back(), ids[i]);
  }
  for (auto& s : streams)
    while (!s->started) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> getters;
  std::atomic<int> ok{0};
  for (int t = 0; t < 5; ++t) {
    getters.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto res = Client().Get(("/v1/jobs/" + ids[i]).c_str());
        if (res && res->status == 200) ++ok;
      }
    });
  }
  for (auto& g : getters) g.join();
  auto elapsed = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(ok.load(), 50);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 3000);

  for (const auto& id : ids) ASSERT_TRUE(service_.Transition(id, JobState::kDone, "").ok());
  for (auto& s : streams) {
    s->thread.join();
    EXPECT_EQ(ParseSse(s->Text()).back().event, "end");
  }
}

TEST_F(ApiServerTest, StreamsBeyondTheCapGet503) {
  ApiOptions o;
  o.max_sse_streams = 2;
  o.threads = 8;
  Start(o);
  std::string id = SubmitOk();
  Stream a, b;
  OpenStream(a, id);
  OpenStream(b, id);
  while (!a.started || !b.started) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto third = Client().Get(("/v1/jobs/" + id + "/events").c_str());
  ASSERT_TRUE(third);
  EXPECT_EQ(third->status, 503);
  EXPECT_EQ(Body(third)["error"]["class"], "infra_error");
  EXPECT_EQ(Body(third)["error"]["message"], "too many event streams, retry later");
  ASSERT_TRUE(service_.Transition(id, JobState::kDone, "").ok());
  a.thread.join();
  b.thread.join();
  // Slots come back when streams end.
  Stream c;
  OpenStream(c, id);
  c.thread.join();
  EXPECT_EQ(c.status, 200);
}

TEST_F(ApiServerTest, ResultIs202UntilTheJobEnds) {
  Start();
  std::string id = SubmitOk();
  auto pending = Client().Get(("/v1/jobs/" + id + "/result").c_str());
  EXPECT_EQ(pending->status, 202);
  EXPECT_EQ(Body(pending)["queue_position"], 1);
  ASSERT_TRUE(service_.Transition(id, JobState::kDone, "", R"({"schema_version":1,"ok":true})").ok());
  auto done = Client().Get(("/v1/jobs/" + id + "/result").c_str());
  EXPECT_EQ(done->status, 200);
  EXPECT_EQ(Body(done)["ok"], true);
}

TEST_F(ApiServerTest, BlobsUploadDownloadAndHead) {
  Start();
  std::string data("\0\1\2binary", 9);
  auto up = Client().Post("/v1/blobs", data, "application/octet-stream");
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 201);
  std::string hash = Body(up)["hash"];
  EXPECT_EQ(hash, Sha256Hex(data));
  EXPECT_EQ(Body(up)["size"], 9);
  auto head = Client().Head(("/v1/blobs/" + hash).c_str());
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  auto down = Client().Get(("/v1/blobs/" + hash).c_str());
  EXPECT_EQ(down->body, data);
  EXPECT_EQ(down->get_header_value("Content-Type"), "application/octet-stream");
  std::string missing(64, 'a');
  EXPECT_EQ(Client().Head(("/v1/blobs/" + missing).c_str())->status, 404);
  EXPECT_EQ(Client().Get("/v1/blobs/nothex")->status, 400);
}

TEST_F(ApiServerTest, InfoMapsGpusForSeed003Clients) {
  Start();
  auto res = Client().Get("/info");
  ASSERT_TRUE(res);
  json info = Body(res);
  EXPECT_EQ(info["success"], true);
  EXPECT_EQ(info["info"]["device_name"], "Test GPU");
  EXPECT_EQ(info["info"]["compute_capability"], json::array({9, 0}));
  EXPECT_EQ(info["info"]["total_memory_mb"], 80 * 1024);
  EXPECT_EQ(info["info"]["multiprocessor_count"], 132);
}

}  // namespace
}  // namespace assay::api_test
