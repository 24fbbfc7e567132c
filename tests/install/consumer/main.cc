// A server and a client of pantry.v1.Pantry in one process, on loopback: the program a project
// outside rill's tree builds against an installed rill. Exits 0 when every call answered as
// expected, 1 (with the reason on stderr) otherwise.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "pantry.rill.h"
#include "rill/channel.h"
#include "rill/server.h"

namespace {

using pantry::v1::Order;
using pantry::v1::Shelf;
using pantry::v1::Weight;

class PantryService final : public pantry::v1::Pantry::Service {
 public:
  rill::Status Weigh(rill::ServerContext& context, const Shelf& shelf, Weight& weight) override {
    int64_t grams = 0;
    for (const Shelf::Jar& jar : shelf.jars()) grams += jar.grams();
    weight.set_grams(grams);
    return rill::Status();
  }

  rill::Awaitable<rill::Status> Fill(rill::ServerContext& context, const Order& order,
                                     rill::ServerWriter<Shelf>& writer) override {
    for (const std::string& name : order.shelves()) {
      Shelf shelf;
      shelf.set_name(name);
      for (int i = 1; i <= order.jars_per_shelf(); ++i) {
        Shelf::Jar* jar = shelf.add_jars();
        jar->set_label(name + " " + std::to_string(i));
        jar->set_grams(100 * i);
      }
      if (!co_await writer.Write(shelf)) {
        co_return rill::Status(rill::StatusCode::kCancelled, "the client left");
      }
    }
    co_return rill::Status();
  }

  rill::Awaitable<rill::Status> Store(
      rill::ServerContext& context, rill::ServerReaderWriter<Weight, Shelf::Jar>& stream) override {
    Weight total;
    for (Shelf::Jar jar; co_await stream.Read(&jar);) {
      total.set_grams(total.grams() + jar.grams());
      if (!co_await stream.Write(total)) {
        co_return rill::Status(rill::StatusCode::kCancelled, "the client left");
      }
    }
    co_return rill::Status();
  }
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "pantry: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  PantryService service;
  int port = 0;
  auto server = rill::ServerBuilder()
                    .AddListeningPort("127.0.0.1:0", &port)
                    .RegisterService(&service)
                    .SetReactorCount(1)
                    .Build();
  if (!server.ok()) return Fail("server: " + server.status().ToString());

  auto channel = rill::Channel::Create("127.0.0.1:" + std::to_string(port));
  if (!channel.ok()) return Fail("channel: " + channel.status().ToString());
  pantry::v1::Pantry::Stub stub(*channel);

  // Unary.
  Shelf shelf;
  shelf.set_name("spices");
  for (int grams : {40, 60, 25}) shelf.add_jars()->set_grams(grams);
  Weight weight;
  rill::ClientContext weigh_context;
  weigh_context.set_timeout(std::chrono::seconds(30));
  rill::Status status = stub.Weigh(weigh_context, shelf, &weight);
  if (!status.ok()) return Fail("Weigh: " + status.ToString());
  if (weight.grams() != 125) return Fail("Weigh: " + std::to_string(weight.grams()) + " grams");

  // Server streaming.
  Order order;
  order.add_shelves("jam");
  order.add_shelves("honey");
  order.set_jars_per_shelf(3);
  rill::ClientContext fill_context;
  fill_context.set_timeout(std::chrono::seconds(30));
  auto fill = stub.Fill(fill_context, order);
  std::string seen;
  for (Shelf filled; fill->BlockingRead(&filled);) {
    seen += filled.name() + ":";
    for (const Shelf::Jar& jar : filled.jars()) {
      seen += " " + jar.label() + "=" + std::to_string(jar.grams());
    }
    seen += ";";
  }
  status = fill->BlockingFinish();
  if (!status.ok()) return Fail("Fill: " + status.ToString());
  const std::string expected =
      "jam: jam 1=100 jam 2=200 jam 3=300;honey: honey 1=100 honey 2=200 honey 3=300;";
  if (seen != expected) return Fail("Fill: got \"" + seen + "\"");

  // Bidirectional streaming: all writes, then all reads (three small answers fit in the
  // stream's flow-control window).
  rill::ClientContext store_context;
  store_context.set_timeout(std::chrono::seconds(30));
  auto store = stub.Store(store_context);
  for (int grams : {250, 500, 750}) {
    Shelf::Jar jar;
    jar.set_grams(grams);
    if (!store->BlockingWrite(jar)) return Fail("Store: the call ended while writing");
  }
  if (!store->BlockingWritesDone()) return Fail("Store: the call ended before WritesDone");
  std::string totals;
  for (Weight total; store->BlockingRead(&total);) totals += std::to_string(total.grams()) + " ";
  status = store->BlockingFinish();
  if (!status.ok()) return Fail("Store: " + status.ToString());
  if (totals != "250 750 1500 ") return Fail("Store: got \"" + totals + "\"");

  (*server)->Shutdown();
  std::printf("pantry: ok\n");
  return 0;
}
