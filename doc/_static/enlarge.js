// Click to enlarge: every gallery figure links to its full-resolution file.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("img.sphx-glr-single-img, img.sphx-glr-multi-img, img.clarytree-figure")
    .forEach(function (img) {
      if (img.closest("a")) {
        return;
      }
      // The largest srcset candidate is the sharpest.
      var href = img.getAttribute("src");
      var srcset = img.getAttribute("srcset");
      if (srcset) {
        var parts = srcset.split(",").map(function (s) { return s.trim().split(/\s+/)[0]; });
        href = parts[parts.length - 1] || href;
      }
      var link = document.createElement("a");
      link.href = href;
      link.target = "_blank";
      link.title = "Open the full-size figure";
      link.className = "clarytree-enlarge";
      img.parentNode.insertBefore(link, img);
      link.appendChild(img);
    });
});
