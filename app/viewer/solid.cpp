// Untextured fills. Dear ImGui's OpenGL 3 backend samples its font atlas for every pixel, even
// for plain boxes, and software GL (llvmpipe) spends most of a frame on those fetches. Draw-list
// callbacks switch to a shader that only passes the vertex colour through around runs of boxes
// and lines (never text: glyphs need the atlas) and back again; the pixels come out the same,
// since boxes sample the atlas's opaque white texel.
#define GL_GLEXT_PROTOTYPES 1
#include "app/viewer/viewer.h"

#include <imgui.h>

#include <GL/gl.h>
#include <GL/glext.h>

namespace strata::viewer {

namespace {

struct SolidProgram {
  GLuint program = 0;
  GLint proj = -1, textured_proj = -1;  // ProjMtx in ours and in the backend's
  GLuint built_for = 0;  // the backend's program whose attribute locations ours shares
  GLint textured = 0;    // the backend's program, current before a run
  bool failed = false;
};
SolidProgram g_solid;

GLuint compile(GLenum kind, const char* src) {
  GLuint s = glCreateShader(kind);
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    glDeleteShader(s);
    return 0;
  }
  return s;
}

// Links a program reading the backend's vertex layout (same attribute locations) and projection.
bool build(GLuint textured) {
  static const char* vs =
      "#version 330 core\n"
      "uniform mat4 ProjMtx;\n"
      "in vec2 Position;\n"
      "in vec4 Color;\n"
      "out vec4 Frag_Color;\n"
      "void main() { Frag_Color = Color; gl_Position = ProjMtx * vec4(Position.xy, 0, 1); }\n";
  static const char* fs =
      "#version 330 core\n"
      "in vec4 Frag_Color;\n"
      "out vec4 Out_Color;\n"
      "void main() { Out_Color = Frag_Color; }\n";
  GLint pos = glGetAttribLocation(textured, "Position"), colour = glGetAttribLocation(textured, "Color");
  if (pos < 0 || colour < 0) return false;
  GLuint v = compile(GL_VERTEX_SHADER, vs), f = compile(GL_FRAGMENT_SHADER, fs);
  GLuint p = v && f ? glCreateProgram() : 0;
  if (p) {
    glAttachShader(p, v);
    glAttachShader(p, f);
    glBindAttribLocation(p, GLuint(pos), "Position");
    glBindAttribLocation(p, GLuint(colour), "Color");
    glLinkProgram(p);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    glDetachShader(p, v);
    glDetachShader(p, f);
    if (!ok) {
      glDeleteProgram(p);
      p = 0;
    }
  }
  if (v) glDeleteShader(v);
  if (f) glDeleteShader(f);
  if (!p) return false;
  if (g_solid.program) glDeleteProgram(g_solid.program);
  g_solid.program = p;
  g_solid.proj = glGetUniformLocation(p, "ProjMtx");
  g_solid.textured_proj = glGetUniformLocation(textured, "ProjMtx");
  g_solid.built_for = textured;
  return true;
}

void on_begin(const ImDrawList*, const ImDrawCmd*) {
  glGetIntegerv(GL_CURRENT_PROGRAM, &g_solid.textured);
  GLuint textured = GLuint(g_solid.textured);
  if (!textured || g_solid.failed) return;
  if (textured != g_solid.built_for && !build(textured)) {
    g_solid.failed = true;  // keep drawing through the backend's shader
    return;
  }
  float m[16];
  glGetUniformfv(textured, g_solid.textured_proj, m);
  glUseProgram(g_solid.program);
  glUniformMatrix4fv(g_solid.proj, 1, GL_FALSE, m);
}

void on_end(const ImDrawList*, const ImDrawCmd*) {
  if (g_solid.textured) glUseProgram(GLuint(g_solid.textured));
}

}  // namespace

void begin_solid(ImDrawList* dl) { dl->AddCallback(on_begin, nullptr); }

void end_solid(ImDrawList* dl) { dl->AddCallback(on_end, nullptr); }

void forget_solid() { g_solid = {}; }

}  // namespace strata::viewer
