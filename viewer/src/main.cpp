// memlens-viewer: see where memory went and click through to the line that caused it.
//
//   memlens-viewer [TRACE] [--diff OTHER] [--screenshot OUT.png] [--size 1600x1000]
//                  [--cursor peak|SECONDS] [--tab memory|leaks|broadcast|...] [--stack category|site]
//                  [--follow [--pid PID] [--screenshot-while-recording OUT.png]]
//
// With --screenshot it renders the window once the trace is analysed, writes the PNG and
// exits (Xvfb and Mesa's software OpenGL are enough); with --follow, once the recording
// has finished or stopped. --frames N with --benchmark prints the time to the first frame
// and the mean frame time as JSON (with --follow, the frames drawn while it recorded too).
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>

#include "memlens/analysis/diff.hpp"
#include "panels.hpp"
#include "screenshot.hpp"
#include "session.hpp"

using namespace memlens;
using namespace memlens::viewer;

namespace {

constexpr Tab kTabs[] = {Tab::Memory, Tab::Leaks, Tab::Broadcast, Tab::Contiguity, Tab::Transfers, Tab::Churn, Tab::Diff};

std::vector<std::string> dropped;  // paths dropped on the window, opened next frame
std::string glfw_error;            // GLFW's last complaint, said within our own one line

struct App {
  TraceSession trace, other;
  ViewState view;
  std::string cursor_request;  // "peak" or seconds, applied once the trace is ready
  std::unique_ptr<analysis::ReportDiff> diff;
  std::string message;  // an error to show in a popup
  char open_path[1024] = {};
  bool open_dialog = false;
  bool open_for_diff = false;  // the dialog opens the trace to compare with

  void apply_cursor_request() {
    if (cursor_request.empty() || trace.state() != TraceSession::State::Ready) return;
    view.follow_newest = false;
    if (cursor_request == "peak") {
      if (const auto* d = trace.report().main_device()) view.cursor_ns = d->peak_allocated.time_ns;
    } else {
      view.cursor_ns = static_cast<std::uint64_t>(std::atof(cursor_request.c_str()) * 1e9);
    }
    cursor_request.clear();
  }

  // A followed trace's state beside its summary: recording until the footer, then finished;
  // stopped (with why) when its program went without one.
  void draw_follow_state() {
    ImGui::SameLine();
    switch (trace.follow_state()) {
      case analysis::FollowState::Recording:
        ImGui::TextColored(ImVec4(1, 0.35f, 0.35f, 1), "[recording]");
        break;
      case analysis::FollowState::Finished:
        ImGui::TextColored(ImVec4(0.4f, 0.85f, 0.4f, 1), "[finished]");
        break;
      case analysis::FollowState::Stopped:
      case analysis::FollowState::Waiting:
        ImGui::TextColored(ImVec4(1, 0.6f, 0.2f, 1), "[%s: %s]", std::string(follow_state_name(trace.follow_state())).c_str(),
                           trace.follow_reason().c_str());
        break;
    }
  }

  // Headless: the trace to shoot is ready (a followed one: its recording is over).
  bool settled() const {
    if (!trace.following()) return ready();
    const auto s = trace.follow_state();
    return trace.state() == TraceSession::State::Failed ||
           (trace.state() == TraceSession::State::Ready &&
            (s == analysis::FollowState::Finished || s == analysis::FollowState::Stopped));
  }

  bool ready() const { return trace.state() != TraceSession::State::Loading && other.state() != TraceSession::State::Loading; }

  void frame() {
    for (const auto& p : dropped) trace.open(p), diff.reset(), view.fit = true;
    dropped.clear();
    if (trace.take_update()) diff.reset();  // a followed trace grew: compare what it holds now
    view.live = trace.following();
    trace.want_newest_memory(view.follow_newest && view.tab == Tab::Memory);
    if (std::string e = trace.take_error(); !e.empty()) message = e;
    if (std::string e = other.take_error(); !e.empty()) message = e;
    apply_cursor_request();
    view.generation = trace.generation() << 32 | other.generation();
    if (!diff && trace.state() == TraceSession::State::Ready && other.state() == TraceSession::State::Ready)
      diff = std::make_unique<analysis::ReportDiff>(analysis::diff_reports(trace.report(), other.report()));

    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("memlens", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoBringToFrontOnFocus);
    if (ImGui::BeginMenuBar()) {
      if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open...")) open_dialog = true, open_for_diff = false;
        if (ImGui::MenuItem("Compare with...")) open_dialog = true, open_for_diff = true;
        ImGui::EndMenu();
      }
      ImGui::TextDisabled("%s", trace.path().empty() ? "drop a .memtrace here, or File > Open" : trace.path().c_str());
      ImGui::EndMenuBar();
    }
    if (open_dialog) ImGui::OpenPopup("Open trace"), open_dialog = false;
    if (ImGui::BeginPopupModal("Open trace", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
      ImGui::InputText("path", open_path, sizeof open_path);
      if (ImGui::Button("Open")) {
        if (open_for_diff) {
          other.open(open_path), diff.reset(), view.tab = Tab::Diff, view.tab_requested = true;
        } else {
          trace.open(open_path), diff.reset(), view.fit = true;
        }
        ImGui::CloseCurrentPopup();
      }
      ImGui::SameLine();
      if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
    }
    if (!message.empty()) ImGui::OpenPopup("Cannot open");
    if (ImGui::BeginPopupModal("Cannot open", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
      ImGui::TextUnformatted(message.c_str());
      if (ImGui::Button("OK")) message.clear(), ImGui::CloseCurrentPopup();
      ImGui::EndPopup();
    }

    switch (trace.state()) {
      case TraceSession::State::Empty:
      case TraceSession::State::Failed:
        ImGui::TextWrapped("No trace open. Record one with `memlens record -o run.memtrace -- PROGRAM`, then drop it here.");
        break;
      case TraceSession::State::Loading:
        if (trace.following() && trace.progress() == 0) {
          ImGui::TextUnformatted(trace.follow_reason().empty() ? ("waiting for " + trace.path()).c_str()
                                                               : trace.follow_reason().c_str());
          break;
        }
        ImGui::Text("reading %s", trace.path().c_str());
        ImGui::ProgressBar(static_cast<float>(trace.progress()), ImVec2(400, 0));
        break;
      case TraceSession::State::Ready: {
        const analysis::Report& r = trace.report();
        ImGui::Text("%s: %llu events, %.3f s, %llu steps, %zu findings", r.program.c_str(),
                    static_cast<unsigned long long>(r.events), static_cast<double>(r.duration_ns) / 1e9,
                    static_cast<unsigned long long>(r.steps), r.findings.size());
        if (trace.following()) draw_follow_state();
        if (!r.problem.empty()) ImGui::TextColored(ImVec4(1, 0.6f, 0.2f, 1), "warning: %s", r.problem.c_str());
        draw_timeline(r, view, ImGui::GetContentRegionAvail().y * 0.42f);
        if (ImGui::BeginTabBar("tabs")) {
          for (Tab t : kTabs) {
            ImGuiTabItemFlags flags = view.tab_requested && view.tab == t ? ImGuiTabItemFlags_SetSelected : 0;
            if (ImGui::BeginTabItem(tab_name(t), nullptr, flags)) {
              if (!view.tab_requested) view.tab = t;
              if (t == Tab::Memory) draw_memory(trace, view);
              else draw_report_tab(t, r, view, diff.get());
              ImGui::EndTabItem();
            }
          }
          view.tab_requested = false;
          ImGui::EndTabBar();
        }
        break;
      }
    }
    ImGui::End();
  }
};

bool parse_size(const std::string& s, int* w, int* h) { return std::sscanf(s.c_str(), "%dx%d", w, h) == 2 && *w > 0 && *h > 0; }

}  // namespace

namespace memlens::viewer {

const char* tab_name(Tab t) {
  switch (t) {
    case Tab::Memory:
      return "memory";
    case Tab::Leaks:
      return "leaks";
    case Tab::Broadcast:
      return "broadcast";
    case Tab::Contiguity:
      return "contiguity";
    case Tab::Transfers:
      return "transfers";
    case Tab::Churn:
      return "churn";
    case Tab::Diff:
      return "diff";
  }
  return "?";
}

bool parse_tab(const std::string& name, Tab* out) {
  for (Tab t : kTabs)
    if (name == tab_name(t)) return *out = t, true;
  return false;
}

}  // namespace memlens::viewer

int main(int argc, char** argv) {
  CLI::App cli{"memlens-viewer: memory over time, the allocator at any moment, and every report, clickable", "memlens-viewer"};
  std::string file, other, screenshot, size = "1600x1000", cursor, tab = "memory", stack = "category";
  std::string during_screenshot;
  int frames = 0;
  std::int64_t pid = 0;
  bool benchmark = false, follow = false;
  cli.add_option("TRACE", file, "a .memtrace to open (or drop one on the window)");
  cli.add_flag("--follow", follow,
               "follow TRACE while it is recorded: the timeline grows, the cursor stays at the newest time until "
               "moved, the reports refresh; waits for the file if it is not there yet");
  cli.add_option("--pid", pid, "with --follow: the recording program's process (a trace another process wrote is waited past)")
      ->check(CLI::PositiveNumber);
  cli.add_option("--screenshot-while-recording", during_screenshot,
                 "with --follow: also a PNG of the first frame that shows the recording under way (a step done)");
  cli.add_option("--diff", other, "a second trace to compare with (the diff tab)");
  cli.add_option("--screenshot", screenshot, "render one frame to this PNG and exit");
  cli.add_option("--size", size, "window size, WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--cursor", cursor, "where the cursor starts: peak, or seconds into the trace");
  cli.add_option("--tab", tab, "memory, leaks, broadcast, contiguity, transfers, churn or diff")->capture_default_str();
  cli.add_option("--stack", stack, "what the timeline stacks: category or site")
      ->check(CLI::IsMember({"category", "site"}))
      ->capture_default_str();
  cli.add_option("--frames", frames, "render this many frames after the trace is read, then exit");
  cli.add_flag("--benchmark", benchmark, "print time to first frame and mean frame time (JSON) on exit");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "memlens-viewer: %s (see memlens-viewer --help)\n", e.what());
    return 2;
  }
  int width = 0, height = 0;
  App app;
  if (!parse_size(size, &width, &height)) {
    std::fprintf(stderr, "memlens-viewer: --size: expected WIDTHxHEIGHT, got '%s'\n", size.c_str());
    return 2;
  }
  if (!parse_tab(tab, &app.view.tab)) {
    std::fprintf(stderr, "memlens-viewer: --tab: unknown tab '%s'\n", tab.c_str());
    return 2;
  }
  app.view.by_site = stack == "site";
  if (follow && file.empty()) {
    std::fprintf(stderr, "memlens-viewer: --follow: give the trace to follow\n");
    return 2;
  }
  if (!follow && (pid || !during_screenshot.empty())) {
    std::fprintf(stderr, "memlens-viewer: --pid and --screenshot-while-recording go with --follow\n");
    return 2;
  }
  bool headless = !screenshot.empty() || frames > 0;
  auto start = std::chrono::steady_clock::now();

  glfwSetErrorCallback([](int, const char* what) {
    glfw_error = what;
    while (!glfw_error.empty() && glfw_error.back() == ' ') glfw_error.pop_back();
  });
  if (!glfwInit()) {
    std::fprintf(stderr, "memlens-viewer: cannot open a window: %s (no display? run under xvfb-run)\n", glfw_error.c_str());
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  GLFWwindow* window = glfwCreateWindow(width, height, "memlens-viewer", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "memlens-viewer: cannot create an OpenGL 3 window: %s\n", glfw_error.c_str());
    glfwTerminate();
    return 2;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(headless ? 0 : 1);
  glfwSetDropCallback(window, [](GLFWwindow*, int n, const char** paths) {
    for (int i = 0; i < n; ++i) dropped.emplace_back(paths[i]);
  });
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the same layout every run (and in tests)
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  app.cursor_request = cursor;
  app.trace.on_publish([] { glfwPostEmptyEvent(); });
  // Following, the window yields the CPU to the program being recorded; nice 10 still
  // leaves it about a tenth of a CPU the recording keeps busy, to draw with.
  if (follow) {
    (void)!setpriority(PRIO_PROCESS, 0, 10);
    app.trace.follow(file, pid);
  } else if (!file.empty()) {
    app.trace.open(file);
  }
  if (!other.empty()) app.other.open(other);

  // While following: whole frames, and the slowest build of one (the window's work before
  // OpenGL draws it: Mesa's drawing on the CPU is no viewer's cost on a GPU).
  double first_frame_s = -1, frame_total_s = 0, slowest_frame_s = 0, following_total_s = 0, slowest_build_s = 0;
  int frames_after_ready = 0, frames_recording = 0, frames_following = 0, status = 0;
  // What a screenshot of a followed trace showed, on stdout (its tests read it).
  auto shot = [&](const std::string& path, int fw, int fh) {
    write_screenshot(path, fw, fh);
    if (!app.trace.following()) return;
    const analysis::Report& r = app.trace.report();
    std::printf("memlens-viewer: wrote %s (%s, %llu events, %llu steps)\n", path.c_str(),
                std::string(follow_state_name(app.trace.follow_state())).c_str(), static_cast<unsigned long long>(r.events),
                static_cast<unsigned long long>(r.steps));
    std::fflush(stdout);
  };
  while (!glfwWindowShouldClose(window)) {
    // A window in use, or one following a recording, is drawn when something happens (input,
    // a new report) or every 100 ms: drawing without pause would take a CPU from the
    // program being recorded (Mesa draws on the CPU). A screenshot of a whole trace draws at once.
    if (headless && !app.trace.following()) glfwPollEvents();
    else glfwWaitEventsTimeout(0.1);
    auto frame_start = std::chrono::steady_clock::now();  // the frame's own time, not the wait for it
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
    const auto built = std::chrono::steady_clock::now();  // the window's own work; drawing it follows
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.1f, 0.1f, 0.12f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glFinish();
    auto now = std::chrono::steady_clock::now();
    if (first_frame_s < 0) first_frame_s = std::chrono::duration<double>(now - start).count();
    // A frame that showed a followed recording under way.
    const bool recording = app.trace.following() && app.trace.state() == TraceSession::State::Ready &&
                           app.trace.follow_state() == analysis::FollowState::Recording;
    if (recording) {
      const double s = std::chrono::duration<double>(now - frame_start).count();
      slowest_frame_s = std::max(slowest_frame_s, s), following_total_s += s, ++frames_following;
      slowest_build_s = std::max(slowest_build_s, std::chrono::duration<double>(built - frame_start).count());
    }
    if (!during_screenshot.empty() && recording && app.trace.report().steps > 0 && ++frames_recording == 4) {
      try {
        shot(during_screenshot, fw, fh);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "memlens-viewer: %s\n", e.what());
        status = 2;
        break;
      }
    }
    if (headless && app.settled()) {
      if (app.trace.state() != TraceSession::State::Ready) {
        std::fprintf(stderr, "memlens-viewer: %s\n", app.message.empty() ? "no trace to show" : app.message.c_str());
        status = 2;
        break;
      }
      ++frames_after_ready;
      if (frames_after_ready > 3) frame_total_s += std::chrono::duration<double>(now - frame_start).count();
      // A few frames first: ImGui lays out tables and tabs over the first frames.
      if (!screenshot.empty() && frames_after_ready == 4) {
        if (!during_screenshot.empty() && frames_recording < 4) {
          std::fprintf(stderr, "memlens-viewer: the recording ended before a frame showed it under way: no %s\n",
                       during_screenshot.c_str());
          status = 2;
        }
        try {
          shot(screenshot, fw, fh);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "memlens-viewer: %s\n", e.what());
          status = 2;
        }
        if (frames == 0) break;
      }
      if (frames > 0 && frames_after_ready >= frames + 3) break;
    }
    glfwSwapBuffers(window);
  }
  if (benchmark) {
    double ready_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - frame_total_s;
    int measured = std::max(1, frames_after_ready - 3);
    std::printf(
        "{\"benchmark\": \"memlens_viewer\", \"time_to_first_frame_s\": %.4f, \"time_to_report_s\": %.4f, "
        "\"frames\": %d, \"mean_frame_ms\": %.3f, \"frames_while_recording\": %d, \"mean_frame_while_recording_ms\": %.3f, "
        "\"slowest_frame_while_recording_ms\": %.3f, \"slowest_frame_build_while_recording_ms\": %.3f}\n",
        first_frame_s, ready_s, measured, 1000 * frame_total_s / measured, frames_following,
        frames_following ? 1000 * following_total_s / frames_following : 0.0, 1000 * slowest_frame_s, 1000 * slowest_build_s);
  }
  app.trace.wait();
  app.other.wait();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return status;
}
